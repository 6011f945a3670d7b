import { GraphQLError } from "graphql";
import type { RailwayDeployments } from "./railway-deployments.js";
import {
  type DeploymentRecord,
  type DomainRecord,
  latestOf,
  now,
  type ServiceRecord,
  type VolumeRecord,
} from "./railway-records.js";

/** What the resolvers need of the emulator (RailwayEmulator is one). */
export interface EmulatedRailway {
  readonly projectId: string;
  readonly environmentId: string;
  readonly services: Map<string, ServiceRecord>;
  readonly volumes: Map<string, VolumeRecord>;
  readonly deployments: RailwayDeployments;
  serviceOf(id: string): ServiceRecord;
  createService(name: string, variables: Record<string, string>, image: string | null): ServiceRecord;
  createVolume(service: ServiceRecord, mountPath: string): Promise<VolumeRecord>;
  deploy(service: ServiceRecord): DeploymentRecord;
  shellToken(serviceId: string, instanceId: string): string;
  createDomain(service: ServiceRecord, targetPort: number | null): Promise<DomainRecord>;
  deleteService(service: ServiceRecord): Promise<void>;
  deleteVolume(volume: VolumeRecord): Promise<void>;
}

type Args = Record<string, unknown>;
type Input = Record<string, unknown>;

/** One page of a connection (first/after by index cursors), as the schema's *Connection types. */
function connection<T>(items: T[], args: Args) {
  const start = typeof args.after === "string" ? Number(args.after) + 1 : 0;
  const first = typeof args.first === "number" ? args.first : items.length;
  const page = items.slice(start, start + first);
  return {
    edges: page.map((node, i) => ({ cursor: String(start + i), node })),
    pageInfo: {
      hasNextPage: start + first < items.length,
      hasPreviousPage: start > 0,
      startCursor: page.length ? String(start) : null,
      endCursor: page.length ? String(start + page.length - 1) : null,
    },
  };
}

/** Deployment, with what the emulator knows. */
function deploymentView(emulator: EmulatedRailway, deployment: DeploymentRecord) {
  return {
    id: deployment.id,
    status: deployment.status,
    deploymentStopped: deployment.deploymentStopped,
    instances: [deployment.instance],
    createdAt: deployment.createdAt,
    updatedAt: deployment.updatedAt,
    statusUpdatedAt: deployment.updatedAt,
    serviceId: deployment.serviceId,
    environmentId: emulator.environmentId,
    projectId: emulator.projectId,
    canRedeploy: true,
    canRollback: false,
    suggestAddServiceDomain: false,
  };
}

function domainView(emulator: EmulatedRailway, domain: DomainRecord) {
  return {
    id: domain.id,
    domain: domain.domain,
    serviceId: domain.serviceId,
    environmentId: emulator.environmentId,
    projectId: emulator.projectId,
    targetPort: domain.targetPort,
    suffix: "up.railway.app",
    syncStatus: "ACTIVE",
    createdAt: domain.createdAt,
  };
}

function serviceView(emulator: EmulatedRailway, service: ServiceRecord) {
  return {
    id: service.id,
    name: service.name,
    createdAt: service.createdAt,
    updatedAt: service.updatedAt,
    projectId: emulator.projectId,
    featureFlags: [],
    hasHiddenRegistryCredentialsFromTemplate: false,
    isRestricted: false,
  };
}

function volumeInstanceView(emulator: EmulatedRailway, volume: VolumeRecord) {
  return {
    id: volume.instanceId,
    volumeId: volume.id,
    serviceId: volume.serviceId,
    mountPath: volume.mountPath,
    environmentId: emulator.environmentId,
    createdAt: volume.createdAt,
    currentSizeMB: 0,
    sizeMB: 5000,
    isPendingDeletion: false,
    state: "READY",
  };
}

/**
 * The root fields the provider's operations reach (railway-schema.ts), each
 * doing what Railway does (see railway-deployments.ts for deployments).
 * graphql's executor resolves nested fields from the returned objects and
 * checks every answer against the schema's types. A missing resource is a
 * GraphQL error whose message says "not found" (Railway's own wording is
 * not published; the CLI names "Service ... not found", src/errors.rs).
 */
export function railwayResolvers(emulator: EmulatedRailway): Record<string, (args: Args) => unknown> {
  const inEnvironment = (id: unknown) => {
    if (id !== undefined && id !== null && id !== emulator.environmentId)
      throw new GraphQLError("Environment not found");
  };
  const inProject = (id: unknown) => {
    if (id !== emulator.projectId) throw new GraphQLError("Project not found");
  };
  const deploymentOf = (id: unknown) => {
    for (const service of emulator.services.values()) {
      const found = service.deployments.find((d) => d.id === id);
      if (found) return found;
    }
    throw new GraphQLError("Deployment not found");
  };
  return {
    // Query
    deployment: ({ id }) => deploymentView(emulator, deploymentOf(id)),
    serviceInstance: ({ environmentId, serviceId }) => {
      inEnvironment(environmentId);
      const service = emulator.serviceOf(String(serviceId));
      const latest = latestOf(service);
      return {
        id: service.instanceId,
        serviceId: service.id,
        serviceName: service.name,
        environmentId: emulator.environmentId,
        latestDeployment: latest ? deploymentView(emulator, latest) : null,
        activeDeployments: service.deployments
          .filter((d) => d.status === "SUCCESS")
          .map((d) => deploymentView(emulator, d)),
        domains: { serviceDomains: service.domains.map((d) => domainView(emulator, d)) },
        source: service.image ? { image: service.image } : null,
        builder: "RAILPACK",
        createdAt: service.createdAt,
        updatedAt: service.updatedAt,
        isUpdatable: true,
        restartPolicyMaxRetries: 10,
        restartPolicyType: "ON_FAILURE",
        watchPatterns: [],
        numReplicas: 1,
      };
    },
    service: ({ id }) => serviceView(emulator, emulator.serviceOf(String(id))),
    project: ({ id }) => {
      inProject(id);
      const live = [...emulator.services.values()].filter((s) => !s.deleted);
      return {
        id: emulator.projectId,
        name: "agent-computers",
        services: (args: Args) =>
          connection(
            live.map((s) => serviceView(emulator, s)),
            args,
          ),
      };
    },
    environment: ({ id }) => {
      inEnvironment(id);
      return {
        id: emulator.environmentId,
        name: "production",
        projectId: emulator.projectId,
        volumeInstances: (args: Args) =>
          connection(
            [...emulator.volumes.values()].map((v) => volumeInstanceView(emulator, v)),
            args,
          ),
      };
    },
    // Mutation
    serviceCreate: ({ input }) => {
      const given = input as Input;
      inProject(given.projectId);
      inEnvironment(given.environmentId);
      const source = given.source as { image?: string } | undefined;
      const service = emulator.createService(
        typeof given.name === "string" && given.name ? given.name : `service-${Date.now()}`,
        (given.variables as Record<string, string> | undefined) ?? {},
        source?.image ?? null,
      );
      // A service made with a source deploys it at once.
      if (service.image) emulator.deploy(service);
      return serviceView(emulator, service);
    },
    volumeCreate: async ({ input }) => {
      const given = input as Input;
      inProject(given.projectId);
      inEnvironment(given.environmentId);
      const service = emulator.serviceOf(String(given.serviceId));
      const volume = await emulator.createVolume(service, String(given.mountPath));
      return { id: volume.id, name: volume.name, createdAt: volume.createdAt, projectId: emulator.projectId };
    },
    serviceInstanceUpdate: ({ environmentId, serviceId, input }) => {
      inEnvironment(environmentId);
      const service = emulator.serviceOf(String(serviceId));
      const source = (input as Input).source as { image?: string } | undefined;
      if (source?.image) service.image = source.image;
      service.updatedAt = now();
      return true;
    },
    serviceInstanceDeployV2: ({ environmentId, serviceId }) => {
      inEnvironment(environmentId);
      return emulator.deploy(emulator.serviceOf(String(serviceId))).id;
    },
    deploymentStop: async ({ id }) => {
      await emulator.deployments.stop(deploymentOf(id));
      return true;
    },
    serviceDomainCreate: async ({ input }) => {
      const given = input as Input;
      inEnvironment(given.environmentId);
      const service = emulator.serviceOf(String(given.serviceId));
      const port = typeof given.targetPort === "number" ? given.targetPort : null;
      return domainView(emulator, await emulator.createDomain(service, port));
    },
    generateShellToken: ({ input }) => {
      const given = input as Input;
      inEnvironment(given.environmentId);
      if (given.scope !== "shell") throw new GraphQLError(`Unknown scope ${String(given.scope)}`);
      const service = emulator.serviceOf(String(given.serviceId));
      const deployment = latestOf(service);
      // The service's instance (the CLI's default shell target) or its running deployment's instance.
      if (
        !deployment?.containerId ||
        (given.instanceId !== service.instanceId && given.instanceId !== deployment.instance.id)
      ) {
        throw new GraphQLError("Instance not found");
      }
      return emulator.shellToken(service.id, String(given.instanceId));
    },
    serviceDelete: async ({ id, environmentId }) => {
      inEnvironment(environmentId);
      await emulator.deleteService(emulator.serviceOf(String(id)));
      return true;
    },
    volumeDelete: async ({ volumeId }) => {
      const volume = emulator.volumes.get(String(volumeId));
      if (!volume) throw new GraphQLError("Volume not found");
      await emulator.deleteVolume(volume);
      return true;
    },
  };
}
