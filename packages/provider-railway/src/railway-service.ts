import { AgentComputerError } from "@agent-computer/core";
import { abortableSleep } from "@agent-computer/provider-kit";
import { z } from "zod";
import {
  DEPLOYMENT_DEAD,
  deploymentSchema,
  isRunning,
  pageOf,
  type RailwayDeployment,
  type RailwayService,
  type RailwayServiceInstance,
  serviceDomainSchema,
  serviceInstanceSchema,
  serviceSchema,
  volumeInstanceSchema,
} from "./railway-answers.js";
import type { RailwayClient } from "./railway-client.js";
import {
  DEPLOYMENT,
  DEPLOYMENT_STOP,
  ENVIRONMENT_VOLUMES,
  GENERATE_SHELL_TOKEN,
  PROJECT_SERVICES,
  SERVICE_CREATE,
  SERVICE_DELETE,
  SERVICE_DOMAIN_CREATE,
  SERVICE_INSTANCE,
  SERVICE_INSTANCE_DEPLOY,
  SERVICE_INSTANCE_UPDATE,
  VOLUME_CREATE,
  VOLUME_DELETE,
} from "./railway-documents.js";
import type { ParsedRailwayOptions } from "./railway-provider-options.js";

/**
 * The variables a computer's service is made with. RAILWAY_RUN_UID=0 runs
 * the image's processes as root, Railway's documented way for an image
 * with a non-root user to write a volume, which it mounts owned by root
 * (see the README); every command then drops to the computer's user.
 */
export const SERVICE_VARIABLES = { RAILWAY_RUN_UID: "0" } as const;

/** How many of the latest shell tokens are redacted from messages (each command mints one). */
const RECENT_SHELL_TOKENS = 256;

/**
 * The control plane of the computers' services, over the GraphQL client:
 * what the machine and the provider ask of a service (made, deployed,
 * stopped, found, its instance, domains and shell tokens, deleted).
 */
export class RailwayServiceHost {
  readonly homePath: string;
  /** The shell tokens given out lately, oldest first (see keepSecret). */
  private readonly recentShellTokens: string[] = [];
  /** One start at a time per service: commands meeting a stopped service share it. */
  private readonly starting = new Map<string, Promise<string>>();

  constructor(
    readonly client: RailwayClient,
    readonly options: ParsedRailwayOptions,
    readonly execUrl: string,
    readonly secrets: Set<string>,
    /** The image each service deploys; unset: the computer image of this version. */
    private readonly image: () => Promise<string>,
  ) {
    this.homePath = `${options.volumeMountPath}/${options.homeFolder}`;
  }

  private get environmentId(): string {
    return this.options.environmentId;
  }

  /** Makes the service (no source yet), its volume, and deploys the image; gives the service id as soon as it exists. */
  async create(name: string, signal: AbortSignal, made: (serviceId: string) => void): Promise<string> {
    const serviceCreate = await this.createService(name, signal);
    const serviceId = serviceCreate.id;
    made(serviceId);
    await this.client.request(
      "create the computer's volume",
      VOLUME_CREATE,
      {
        input: {
          projectId: this.options.projectId,
          environmentId: this.environmentId,
          serviceId,
          mountPath: this.options.volumeMountPath,
        },
      },
      z.object({ volumeCreate: z.object({ id: z.string() }) }),
      signal,
    );
    await this.client.request(
      "set the service's image",
      SERVICE_INSTANCE_UPDATE,
      { environmentId: this.environmentId, serviceId, input: { source: { image: await this.image() } } },
      z.object({ serviceInstanceUpdate: z.boolean() }),
      signal,
      { idempotent: true },
    );
    await this.start(serviceId, signal);
    return serviceId;
  }

  /**
   * serviceCreate, sent once: there is no idempotency key in
   * ServiceCreateInput. When its answer is lost (no answer, 429, 5xx) the
   * project's services are read for one of this name made since the call
   * began (the name carries the computer's labels, so it is this
   * provision's); found, it is adopted, else the create is sent again.
   */
  private async createService(name: string, signal: AbortSignal): Promise<RailwayService> {
    const input = {
      projectId: this.options.projectId,
      environmentId: this.environmentId,
      name,
      variables: SERVICE_VARIABLES,
    };
    const send = () =>
      this.client
        .request("create a service", SERVICE_CREATE, { input }, z.object({ serviceCreate: serviceSchema }), signal)
        .then((answer) => answer.serviceCreate);
    const since = new Date(Date.now() - 60_000).toISOString();
    try {
      return await send();
    } catch (error) {
      if (!AgentComputerError.is(error, "UNAVAILABLE") || !error.retryable) throw error;
      const made = (await this.services(signal))
        .filter((s) => s.name === name && s.createdAt >= since)
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
      return made ?? send();
    }
  }

  /** The service's instance in the environment; PROVIDER_GONE once the service is deleted. */
  instance(serviceId: string, signal: AbortSignal): Promise<RailwayServiceInstance> {
    return this.client
      .request(
        "read the service",
        SERVICE_INSTANCE,
        { environmentId: this.environmentId, serviceId },
        z.object({ serviceInstance: serviceInstanceSchema }),
        signal,
        { idempotent: true },
      )
      .then((answer) => answer.serviceInstance);
  }

  /** The shell target of the running service (see currentInstance); a stopped service is deployed again first. */
  async runningInstance(serviceId: string, signal: AbortSignal): Promise<string> {
    const instance = await this.instance(serviceId, signal);
    if (!instance.latestDeployment || !isRunning(instance.latestDeployment)) await this.start(serviceId, signal);
    return instance.id;
  }

  /**
   * The id a shell token names for a running service: its ServiceInstance's
   * id, what the CLI gives as a service's shell target by default
   * (railwayapp/cli src/commands/ssh/native.rs, get_service_instance_id;
   * a deployment instance's id is its `--deployment-instance` alternative).
   * UNAVAILABLE when the service is stopped (nothing is deployed).
   */
  async currentInstance(serviceId: string, signal: AbortSignal): Promise<string> {
    const instance = await this.instance(serviceId, signal);
    if (instance.latestDeployment && isRunning(instance.latestDeployment)) return instance.id;
    throw new AgentComputerError("UNAVAILABLE", `railway:${serviceId} is stopped.`, { retryable: false });
  }

  /** Deploys the service's image again (serviceInstanceDeployV2) and waits until it runs; one start per service at a time. */
  start(serviceId: string, signal: AbortSignal): Promise<string> {
    let start = this.starting.get(serviceId);
    if (!start) {
      start = this.deployAndWait(serviceId, signal).finally(() => this.starting.delete(serviceId));
      this.starting.set(serviceId, start);
    }
    return start;
  }

  /** The latest deployment when it is on its way or running (not stopped, not ended): one to wait for, not to double. */
  private async liveDeployment(serviceId: string, signal: AbortSignal): Promise<string | undefined> {
    const latest = (await this.instance(serviceId, signal)).latestDeployment;
    return latest && !latest.deploymentStopped && !DEPLOYMENT_DEAD.has(latest.status) ? latest.id : undefined;
  }

  private async deployAndWait(serviceId: string, signal: AbortSignal): Promise<string> {
    let deploymentId = await this.liveDeployment(serviceId, signal);
    if (!deploymentId) {
      try {
        const { serviceInstanceDeployV2 } = await this.client.request(
          "deploy the service",
          SERVICE_INSTANCE_DEPLOY,
          { environmentId: this.environmentId, serviceId },
          z.object({ serviceInstanceDeployV2: z.string() }),
          signal,
        );
        deploymentId = serviceInstanceDeployV2;
      } catch (error) {
        // A deploy whose answer was lost (no answer, 429, 5xx) may have started one: followed if so, else the error stands.
        if (!AgentComputerError.is(error, "UNAVAILABLE") || !error.retryable) throw error;
        deploymentId = await this.liveDeployment(serviceId, signal);
        if (!deploymentId) throw error;
      }
    }
    const until = Date.now() + this.options.startTimeoutMs;
    for (;;) {
      const deployment = await this.deployment(deploymentId, signal);
      if (isRunning(deployment)) return runningInstanceOf(deployment);
      if (deployment.deploymentStopped || DEPLOYMENT_DEAD.has(deployment.status)) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `railway:${serviceId}'s deployment ended ${deployment.status} before it ran.`,
          { retryable: false, details: { status: deployment.status } },
        );
      }
      if (Date.now() >= until) {
        throw new AgentComputerError(
          "TIMEOUT",
          `railway:${serviceId} stayed ${deployment.status} past the start timeout.`,
        );
      }
      await abortableSleep(this.options.pollMs, signal);
    }
  }

  private deployment(id: string, signal: AbortSignal): Promise<RailwayDeployment> {
    return this.client
      .request("read a deployment", DEPLOYMENT, { id }, z.object({ deployment: deploymentSchema }), signal, {
        idempotent: true,
      })
      .then((answer) => answer.deployment);
  }

  /** Stops the latest deployment unless it is stopped already, and waits until it no longer runs. */
  async stop(serviceId: string, signal: AbortSignal): Promise<void> {
    // A start under way finishes first, so the stop meets the deployment it made.
    await this.starting.get(serviceId)?.catch(() => {});
    const latest = (await this.instance(serviceId, signal)).latestDeployment;
    if (!latest || latest.deploymentStopped || DEPLOYMENT_DEAD.has(latest.status)) return;
    await this.client.request(
      "stop the deployment",
      DEPLOYMENT_STOP,
      { id: latest.id },
      z.object({ deploymentStop: z.boolean() }),
      signal,
      { idempotent: true },
    );
    const until = Date.now() + this.options.startTimeoutMs;
    while (isRunning(await this.deployment(latest.id, signal))) {
      if (Date.now() >= until) throw new AgentComputerError("TIMEOUT", `railway:${serviceId} did not stop in time.`);
      await abortableSleep(this.options.pollMs, signal);
    }
  }

  /** A shell-scoped token for the service's exec bridge (ShellTokenInput: environmentId, serviceId, instanceId, scope; `kind` left unset, the SDK's "sandbox" being for sandboxes). */
  async shellToken(serviceId: string, instanceId: string, signal: AbortSignal): Promise<string> {
    const { generateShellToken } = await this.client.request(
      "open a shell",
      GENERATE_SHELL_TOKEN,
      { input: { environmentId: this.environmentId, serviceId, instanceId, scope: "shell" } },
      z.object({ generateShellToken: z.string().min(1) }),
      signal,
      { idempotent: true },
    );
    this.keepSecret(generateShellToken);
    return generateShellToken;
  }

  /**
   * Keeps a shell token out of every message while it may still be in use
   * or echoed. One is minted per command, so only the latest
   * RECENT_SHELL_TOKENS are kept: the set every message is redacted with
   * stays small in a long-lived process.
   */
  private keepSecret(token: string): void {
    this.secrets.add(token);
    this.recentShellTokens.push(token);
    if (this.recentShellTokens.length > RECENT_SHELL_TOKENS)
      this.secrets.delete(this.recentShellTokens.shift() as string);
  }

  /** The service's public domain routed to `port`: an existing one, else one made (serviceDomainCreate). */
  async domainOf(serviceId: string, port: number, signal: AbortSignal): Promise<string> {
    const known = (await this.instance(serviceId, signal)).domains.serviceDomains.find((d) => d.targetPort === port);
    if (known) return known.domain;
    const { serviceDomainCreate } = await this.client.request(
      "make a public domain",
      SERVICE_DOMAIN_CREATE,
      { input: { environmentId: this.environmentId, serviceId, targetPort: port } },
      z.object({ serviceDomainCreate: serviceDomainSchema }),
      signal,
    );
    return serviceDomainCreate.domain;
  }

  urlOfDomain(domain: string): string {
    return this.options.domainUrl ? this.options.domainUrl(domain) : `https://${domain}`;
  }

  /** Deletes the service, then every volume it mounted; either already gone is fine. */
  async remove(serviceId: string, signal: AbortSignal): Promise<void> {
    const volumes = await this.volumesOf(serviceId, signal);
    await this.client
      .request(
        "delete the service",
        SERVICE_DELETE,
        { id: serviceId, environmentId: this.environmentId },
        z.object({ serviceDelete: z.boolean() }),
        signal,
        { idempotent: true },
      )
      .catch(ignoreGone);
    for (const volumeId of volumes) {
      await this.client
        .request(
          "delete the computer's volume",
          VOLUME_DELETE,
          { volumeId },
          z.object({ volumeDelete: z.boolean() }),
          signal,
          { idempotent: true },
        )
        .catch(ignoreGone);
    }
  }

  /** The volumes mounted by the service in the environment. */
  private async volumesOf(serviceId: string, signal: AbortSignal): Promise<string[]> {
    const found: string[] = [];
    let after: string | null = null;
    const page = z.object({ environment: z.object({ volumeInstances: pageOf(volumeInstanceSchema) }) });
    do {
      const answer: z.output<typeof page> = await this.client.request(
        "list the environment's volumes",
        ENVIRONMENT_VOLUMES,
        { id: this.environmentId, after },
        page,
        signal,
        { idempotent: true, missingMeans: "not-found" },
      );
      const connection = answer.environment.volumeInstances;
      for (const { node } of connection.edges) if (node.serviceId === serviceId) found.push(node.volumeId);
      after = connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null;
    } while (after);
    return found;
  }

  /** Every service of the project, page by page. */
  async services(signal: AbortSignal): Promise<z.output<typeof serviceSchema>[]> {
    const all: z.output<typeof serviceSchema>[] = [];
    let after: string | null = null;
    const page = z.object({ project: z.object({ services: pageOf(serviceSchema) }) });
    do {
      const answer: z.output<typeof page> = await this.client.request(
        "list the project's services",
        PROJECT_SERVICES,
        { id: this.options.projectId, after },
        page,
        signal,
        { idempotent: true, missingMeans: "not-found" },
      );
      all.push(...answer.project.services.edges.map((edge) => edge.node));
      after = answer.project.services.pageInfo.hasNextPage ? answer.project.services.pageInfo.endCursor : null;
    } while (after);
    return all;
  }
}

function runningInstanceOf(deployment: RailwayDeployment): string {
  return (deployment.instances.find((instance) => instance.status === "RUNNING") ?? deployment.instances[0])?.id ?? "";
}

function ignoreGone(error: unknown): void {
  if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
}
