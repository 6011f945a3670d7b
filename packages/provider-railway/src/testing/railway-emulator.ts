import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type FaultRule,
  FaultRules,
  LoopbackServers,
  listenLoopback,
  proxyHttp,
  proxyUpgrade,
  readJson,
  ServiceRecorder,
  sendJson,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { execute, GraphQLError, Kind, parse } from "graphql";
import { ExecBridgeServer } from "./exec-bridge-server.js";
import { RAILWAY_OPERATIONS } from "./railway-definition.js";
import { RailwayDeployments } from "./railway-deployments.js";
import {
  type DeploymentRecord,
  type DomainRecord,
  latestOf,
  newId,
  now,
  type ServiceRecord,
  type VolumeRecord,
  volumeName,
} from "./railway-records.js";
import { railwayResolvers } from "./railway-resolvers.js";
import { type GraphQLRequest, railwaySchema, requestProblems } from "./railway-schema.js";

/** Every container and Docker volume an emulator makes carries this label (its value: the emulator's id). */
export const RAILWAY_EMULATOR_LABEL = "agent-computer.test/railway-emulator";

/**
 * A fault: the next `times` GraphQL requests whose first root field matches
 * `path` (tested against `graphql:<field>`, e.g. `graphql:serviceCreate`)
 * are answered with `status`: 429 with Retry-After (CLI src/client.rs),
 * 200 with a GraphQL error carrying `message`, or 0 for no answer at all
 * (the connection cut). With `after`, the work is done first.
 */
export type RailwayFaultRule = Omit<FaultRule, "code">;

export interface RailwayEmulatorOptions {
  docker: Docker;
  /** The only token the API takes (as a bearer, or as `project-access-token`). */
  token: string;
}

/**
 * A loopback Railway for tests (docs/writing-a-hosted-provider.md): the
 * GraphQL endpoint answering the operations the provider uses from the
 * published schema's part (railway-schema.ts), by graphql's own executor,
 * so every answer has the schema's shape and every request is validated
 * (a violation is recorded by the ServiceRecorder); the exec bridge; and
 * a loopback server per public domain, routed to the port the domain
 * targets in the service's running deployment. One project with one
 * environment (`projectId`, `environmentId`). Deployments are containers
 * of the service's image with its volume a Docker volume
 * (railway-deployments.ts).
 */
export class RailwayEmulator {
  readonly projectId = newId();
  readonly environmentId = newId();
  readonly recorder = new ServiceRecorder("Railway", RAILWAY_OPERATIONS);
  readonly services = new Map<string, ServiceRecord>();
  readonly volumes = new Map<string, VolumeRecord>();
  /** Shell tokens given out, and the service and instance each admits to. */
  private readonly tokens = new Map<string, { serviceId: string; instanceId: string }>();
  /** The domain requests routed, as `<domain> <path>`, for tests. */
  readonly routed: string[] = [];
  private readonly containers: ComputerContainers;
  readonly deployments: RailwayDeployments;
  private readonly servers = new LoopbackServers();
  private readonly api = this.servers.serve(
    (req, res) => void this.handle(req, res),
    (req, socket, head) => this.upgrade(req, socket, head),
  );
  private readonly bridge: ExecBridgeServer;
  private readonly domainServers: Server[] = [];
  private readonly faults = new FaultRules<RailwayFaultRule>();

  constructor(private readonly options: RailwayEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, RAILWAY_EMULATOR_LABEL);
    this.deployments = new RailwayDeployments(this.containers);
    this.bridge = new ExecBridgeServer(this.containers, (token) => this.bridgeTarget(token));
  }

  async start(): Promise<void> {
    await this.servers.listen();
  }

  /** The GraphQL endpoint. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.api.port}/graphql/v2`;
  }

  /** The exec bridge. */
  get execUrl(): string {
    return `ws://127.0.0.1:${this.api.port}/ws/exec`;
  }

  /** The loopback URL a public domain is routed on (the provider's `domainUrl`). */
  urlOfDomain(domain: string): string {
    for (const service of this.services.values()) {
      const found = service.domains.find((d) => d.domain === domain);
      if (found) return found.url;
    }
    throw new Error(`no domain ${domain}`);
  }

  /** Commands run through the exec bridge so far. */
  get execsStarted(): number {
    return this.bridge.started;
  }

  /** The container of the service's running deployment, if any. */
  containerOf(serviceId: string): string | undefined {
    const service = this.services.get(serviceId);
    return service ? latestOf(service)?.containerId : undefined;
  }

  async close(): Promise<void> {
    this.bridge.close();
    for (const server of this.domainServers) {
      server.closeAllConnections?.();
      server.close();
    }
    await this.servers.close();
    await this.containers.removeAll();
    await this.deployments.removeAllVolumes();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] as string;
    let body: unknown;
    try {
      body = await readJson(req);
    } catch {
      body = undefined;
    }
    const exchange = this.recorder.request(req.method ?? "GET", path, { body, headers: req.headers });
    if (exchange.operation?.name !== "graphql") {
      exchange.answer(404, undefined);
      sendJson(res, 404, { errors: [{ message: "Not Found" }] });
      return;
    }
    const fault = this.faults.take("POST", `graphql:${rootFieldOf(body)}`);
    if (fault && !fault.after) return this.answerFault(res, exchange, fault);
    const answer = await this.answerGraphQL(req, body);
    if (fault) return this.answerFault(res, exchange, fault);
    exchange.answer(200, answer);
    sendJson(res, 200, answer);
  }

  private answerFault(
    res: ServerResponse,
    exchange: { answer(status: number, body?: unknown): void },
    fault: RailwayFaultRule,
  ) {
    if (fault.status === 0) {
      res.socket?.destroy();
      return;
    }
    if (fault.status === 429) {
      exchange.answer(429);
      res.writeHead(429, { "retry-after": String(fault.retryAfter ?? 1) }).end("You are being ratelimited");
      return;
    }
    const body = { errors: [{ message: fault.message ?? "injected fault" }] };
    exchange.answer(fault.status, body);
    sendJson(res, fault.status, body);
  }

  /** Injects a fault (see RailwayFaultRule). */
  inject(rule: RailwayFaultRule): void {
    this.faults.inject(rule);
  }

  get pendingFaults(): number {
    return this.faults.pending;
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** Someone deletes the service outside the provider (its volume stays, as a deletion in the dashboard may keep it). */
  async deleteBehindTheProvider(serviceId: string): Promise<void> {
    await this.deleteService(this.serviceOf(serviceId));
  }

  /** Services in the project that are not the provider's (a teammate's, made by hand). */
  addForeignServices(count: number): string[] {
    return Array.from({ length: count }, (_, i) => this.createService(`web-${i}`, {}, null).id);
  }

  /** The name a service carries. */
  nameOf(serviceId: string): string | undefined {
    return this.services.get(serviceId)?.name;
  }

  /** Runs a request against the schema's part with the emulator's resolvers; a refused token is "Not Authorized". */
  private async answerGraphQL(req: IncomingMessage, body: unknown): Promise<Record<string, unknown>> {
    const bearer = String(req.headers.authorization ?? "").replace(/^Bearer /, "");
    const projectToken = String(req.headers["project-access-token"] ?? "");
    if (bearer !== this.options.token && projectToken !== this.options.token) {
      return { errors: [{ message: "Not Authorized" }] };
    }
    const problems = requestProblems(body);
    if (problems.length > 0) return { errors: problems.map((message) => ({ message })) };
    const { query, variables, operationName } = body as GraphQLRequest;
    const result = await execute({
      schema: railwaySchema(),
      document: parse(query),
      rootValue: railwayResolvers(this),
      variableValues: variables ?? {},
      operationName: operationName ?? null,
    });
    if (result.data === undefined && result.errors) {
      // The variables did not fit the document's types: a request outside the definition.
      this.recorder.violations.push({
        call: "POST /graphql/v2",
        operation: "graphql",
        where: "request",
        message: result.errors.map((e) => e.message).join("; "),
      });
    }
    return {
      ...(result.data === undefined ? {} : { data: result.data }),
      ...(result.errors ? { errors: result.errors.map((e) => ({ message: e.message, path: e.path })) } : {}),
    };
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? "/").split("?")[0] as string;
    const exchange = this.recorder.request("GET", path, { headers: req.headers });
    if (exchange.operation?.name !== "exec bridge") {
      exchange.answer(404, undefined);
      socket.destroy();
      return;
    }
    exchange.answer(this.bridge.upgrade(req, socket, head), undefined);
  }

  private bridgeTarget(token: string) {
    const admitted = this.tokens.get(token);
    const service = admitted ? this.services.get(admitted.serviceId) : undefined;
    const deployment = service && !service.deleted ? latestOf(service) : undefined;
    if (!deployment?.containerId) return undefined;
    const containerId = deployment.containerId;
    return { containerId, user: deployment.user, alive: () => deployment.containerId === containerId };
  }

  // What the resolvers (railway-resolvers.ts) change.

  /** The service, or the error Railway answers for one that is not there. */
  serviceOf(id: string): ServiceRecord {
    const service = this.services.get(id);
    if (!service || service.deleted) throw new GraphQLError("Service not found");
    return service;
  }

  createService(name: string, variables: Record<string, string>, image: string | null): ServiceRecord {
    const service: ServiceRecord = {
      id: newId(),
      instanceId: newId(),
      name,
      createdAt: now(),
      updatedAt: now(),
      variables,
      image,
      deployments: [],
      domains: [],
      deleted: false,
    };
    this.services.set(service.id, service);
    return service;
  }

  async createVolume(service: ServiceRecord, mountPath: string): Promise<VolumeRecord> {
    const volume: VolumeRecord = {
      id: newId(),
      instanceId: newId(),
      name: volumeName(),
      serviceId: service.id,
      mountPath,
      createdAt: now(),
      dockerVolume: `railway-emulator-${this.containers.instance}-${randomBytes(4).toString("hex")}`,
    };
    await this.deployments.createVolume(volume);
    this.volumes.set(volume.id, volume);
    return volume;
  }

  deploy(service: ServiceRecord): DeploymentRecord {
    if (!service.image) throw new GraphQLError("Service has no source to deploy");
    const volume = [...this.volumes.values()].find((v) => v.serviceId === service.id);
    return this.deployments.deploy(service, volume);
  }

  shellToken(serviceId: string, instanceId: string): string {
    const part = () => randomBytes(18).toString("base64url");
    const token = `${part()}.${part()}.${part()}`;
    this.tokens.set(token, { serviceId, instanceId });
    return token;
  }

  async createDomain(service: ServiceRecord, targetPort: number | null): Promise<DomainRecord> {
    const domain = `${service.name}-${randomBytes(3).toString("hex")}.up.railway.app`;
    const server = createServer((req, res) => {
      this.routed.push(`${domain} ${req.url}`);
      const target = this.portTarget(service, targetPort);
      if (target) proxyHttp(req, res, target);
      else res.writeHead(502).end("Application failed to respond");
    });
    server.on("upgrade", (req, socket: Duplex, head: Buffer) => {
      this.routed.push(`${domain} ${req.url}`);
      const target = this.portTarget(service, targetPort);
      if (target) proxyUpgrade(req, socket, head, target, this.servers.sockets);
      else socket.destroy();
    });
    this.domainServers.push(server);
    const url = await listenLoopback(server);
    const record: DomainRecord = { id: newId(), domain, serviceId: service.id, targetPort, createdAt: now(), url };
    service.domains.push(record);
    return record;
  }

  /** Where a domain's requests go: the port of the service's running deployment. */
  private portTarget(service: ServiceRecord, port: number | null) {
    const deployment = latestOf(service);
    if (service.deleted || !deployment?.ip || !deployment.containerId || port === null) return undefined;
    return { host: deployment.ip, port };
  }

  async deleteService(service: ServiceRecord): Promise<void> {
    service.deleted = true;
    for (const deployment of service.deployments) await this.deployments.remove(deployment, "REMOVED");
  }

  async deleteVolume(volume: VolumeRecord): Promise<void> {
    this.volumes.delete(volume.id);
    await this.deployments.removeVolume(volume);
  }
}

/** The first root field a posted document selects ("" when it has none). */
function rootFieldOf(body: unknown): string {
  try {
    const document = parse(String((body as { query?: unknown })?.query ?? ""));
    for (const definition of document.definitions) {
      if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
      const field = definition.selectionSet.selections.find((s) => s.kind === Kind.FIELD);
      if (field?.kind === Kind.FIELD) return field.name.value;
    }
  } catch {
    // Not a document: no field to match.
  }
  return "";
}
