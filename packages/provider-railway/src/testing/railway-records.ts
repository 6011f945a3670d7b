import { randomBytes, randomUUID } from "node:crypto";

/** Railway's ids are UUIDs (Service.id, Volume.id, Deployment.id in the published schema are ID!; the CLI prints UUIDs). */
export const newId = (): string => randomUUID();

/** A deployment as the emulator keeps it (Deployment, DeploymentDeploymentInstance). */
export interface DeploymentRecord {
  id: string;
  serviceId: string;
  /** DeploymentStatus: INITIALIZING → DEPLOYING → SUCCESS, or FAILED; REMOVED once replaced by a newer one. */
  status: string;
  deploymentStopped: boolean;
  /** The one instance (numReplicas 1): its id and DeploymentInstanceStatus. */
  instance: { id: string; status: string };
  createdAt: string;
  updatedAt: string;
  containerId?: string;
  /** The container's address on the bridge, while it runs. */
  ip: string;
  /** The user its processes run as (the image's, or root under RAILWAY_RUN_UID=0). */
  user: string;
}

/** A public domain (ServiceDomain): `<name>-<suffix>.up.railway.app`, routed to one port. */
export interface DomainRecord {
  id: string;
  domain: string;
  serviceId: string;
  targetPort: number | null;
  createdAt: string;
  /** The loopback URL the emulator routes the domain on. */
  url: string;
}

/** A volume (Volume and its one VolumeInstance in the environment), backed by a Docker volume. */
export interface VolumeRecord {
  id: string;
  instanceId: string;
  name: string;
  serviceId: string;
  mountPath: string;
  createdAt: string;
  dockerVolume: string;
}

/** A service (Service and its ServiceInstance in the environment). */
export interface ServiceRecord {
  id: string;
  instanceId: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  variables: Record<string, string>;
  image: string | null;
  deployments: DeploymentRecord[];
  domains: DomainRecord[];
  deleted: boolean;
}

export function now(): string {
  return new Date().toISOString();
}

/** A name for a volume as Railway gives one when none is asked for (the schema's Volume.name is String!). */
export function volumeName(): string {
  return `volume-${randomBytes(3).toString("hex")}`;
}

/** The service's latest deployment, if any. */
export function latestOf(service: ServiceRecord): DeploymentRecord | undefined {
  return service.deployments[service.deployments.length - 1];
}
