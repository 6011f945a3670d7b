import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type Exchange,
  FaultRules,
  HttpAnswer,
  listenLoopback,
  proxyHttp,
  proxyUpgrade,
  readBody,
  readJson,
  refuseUpgrade,
  ServiceRecorder,
  sendJson,
  startFence,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { parseEnvelopes } from "./connect-envelope.js";
import { type Answer, ControlPlane, type EmulatedTemplateBuild } from "./e2b-control-plane.js";
import { E2B_OPERATIONS } from "./e2b-definition.js";
import { ALWAYS_DENIED_CIDRS } from "./e2b-network-fence.js";
import { type EmulatedSandbox, lookUpUser, TEMPLATE_USER } from "./e2b-sandbox.js";
import { shortSandboxId } from "./e2b-schemas.js";
import { EnvdFiles } from "./envd-files.js";
import { type ConnectFailure, EnvdProcesses, ProcessStream } from "./envd-processes.js";

export type { EmulatedTemplateBuild } from "./e2b-control-plane.js";
export { CLIENT_ID, EMULATED_ENVD_VERSION, TEMPLATE_USER } from "./e2b-sandbox.js";

/** The label on every container an emulator starts: its id, so `close` (or a sweep) finds them. */
export const E2B_EMULATOR_LABEL = "agent-computer.e2b-emulator";

export interface E2bEmulatorOptions {
  /** The Docker engine the sandboxes run on (a dockerode client). */
  docker: Docker;
  /**
   * Templates by id, each a Docker image (the computer image for the computer
   * template). Each sandbox gets what a v2 template build adds to its image:
   * the `user` user (uid 1001 on an image whose uid 1000 is taken) and its home.
   */
  templates: Record<string, string>;
  /** The one API key the control plane accepts. */
  apiKey: string;
  /** Ports of each sandbox reachable through `portUrl` (default: the screen gateway's 6080 and 8080). */
  ports?: number[];
  /** The sandbox domain used in `<port>-<id>.<domain>` Host routing (default e2b.emulator). */
  domain?: string;
  /**
   * The keepalive interval of process streams, in ms, overriding the
   * request's Keepalive-Ping-Interval seconds (envd: 90 s without one; the
   * SDK asks for 50 s). For tests that wait for one.
   */
  keepaliveMs?: number;
  /** How often the evictor looks for sandboxes past their end (default 50 ms, evictor/evict.go). */
  sweepMs?: number;
  /** The team's longest sandbox life, in hours (default 24, E2B's Pro tier). */
  maxLengthHours?: number;
  /**
   * How fast /files moves bytes each way (default: as fast as loopback):
   * a real link's bandwidth, for transfers longer than one request's timeout.
   */
  filesBytesPerSecond?: number;
  /** How long a pause takes at the service (a memory snapshot, seconds per GB; default: at once). */
  pauseMs?: number;
  /**
   * Addresses (IPv4 CIDRs) a sandbox's network fence treats as public though
   * they are private Docker addresses: a test's fixture hosts, standing in
   * for the internet. Everything else of the service's always-denied ranges
   * stays denied (e2b-network-fence.ts).
   */
  publicStandIns?: string[];
  /** Names resolved in every sandbox and by its fence, standing in for public DNS (name to IPv4 address). */
  publicHosts?: Record<string, string>;
}

/** One control-plane or envd call, as the emulator saw it (never its headers: they carry the key and tokens). */
export interface EmulatorCall {
  method: string;
  path: string;
  sandboxId?: string;
  body?: unknown;
  status: number;
}

/** A fault the next matching requests get. */
export interface ControlPlaneFault {
  /** HTTP status to answer with, such as 503 or 429. */
  status: number;
  /** How many requests get it (default: all until cleared). */
  count?: number;
  /** Only requests whose path matches. */
  path?: RegExp;
  /** Retry-After seconds sent with a 429. */
  retryAfter?: number;
}

type SandboxView = Readonly<
  Pick<
    EmulatedSandbox,
    "id" | "state" | "metadata" | "timeouts" | "containerId" | "autoPause" | "envdAccessToken" | "startedAt" | "endAt"
  >
>;

/** envd paths its token middleware lets through (infra packages/envd/internal/api/auth.go authExcludedPaths). */
const TOKEN_EXEMPT = ["GET/health", "GET/files", "POST/files", "POST/init"];
const STREAMS = ["/process.Process/Start", "/process.Process/Connect", "/process.Process/StreamInput"];
const UNARY = ["List", "Update", "SendInput", "SendSignal", "CloseStdin"];

/**
 * A loopback E2B (docs/architecture.md §12), held to the service's published
 * definition (e2b-definition.ts; `recorder`): the control-plane REST calls
 * the `e2b` and `novita-sandbox` SDKs make, and envd's `/health`, `/files`
 * and Connect process service behind the edge's sandbox headers. Each
 * sandbox is a real container of its template's image with what a template
 * build adds; its timeout is an absolute end at which it pauses or dies.
 * Port traffic reaches a container's port through `portUrl(id, port)` or a
 * `Host: <port>-<id>.<domain>` request. It records what it was asked and
 * injects faults (which are not held to the definition). msw cannot stand
 * in: the SDK fetches through its own undici agent.
 */
export class E2bEmulator {
  /** The label value on this emulator's containers. */
  readonly id: string;
  readonly calls: EmulatorCall[] = [];
  /** Every exchange, checked against e2b-definition.ts; suites assert `recorder.assertNoViolations()`. */
  readonly recorder = new ServiceRecorder("E2B", E2B_OPERATIONS);
  /** Template builds by build id. */
  readonly templateBuilds = new Map<string, EmulatedTemplateBuild>();
  readonly domain: string;
  private readonly sandboxes = new Map<string, EmulatedSandbox>();
  private readonly containers: ComputerContainers;
  private readonly faults = new FaultRules();
  private readonly server: Server;
  private readonly plane: ControlPlane;
  private readonly processes: EnvdProcesses;
  private readonly files: EnvdFiles;
  private sweeper: NodeJS.Timeout | undefined;
  private dropStreams = 0;
  private dropAfterBytes = 0;
  private killFails = 0;
  private failStartsAfterDrop = 0;
  private silentStreams = 0;
  private failStartsAfterSilence = 0;
  private address = "";

  constructor(private readonly options: E2bEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, E2B_EMULATOR_LABEL);
    this.id = this.containers.instance;
    this.domain = options.domain ?? "e2b.emulator";
    this.plane = new ControlPlane({
      containers: this.containers,
      sandboxes: this.sandboxes,
      templates: { ...options.templates },
      templateBuilds: this.templateBuilds,
      ports: options.ports ?? [6080, 8080],
      maxLengthHours: options.maxLengthHours ?? 24,
      removeSandbox: (sandbox) => this.removeSandbox(sandbox),
      extraHosts: Object.entries(options.publicHosts ?? {}).map(([name, address]) => `${name}:${address}`),
      fence: async (sandbox) => {
        if (!sandbox.egress) return;
        sandbox.fenceContainerId = await startFence(
          options.docker,
          sandbox.containerId,
          { ...sandbox.egress, alwaysDenied: ALWAYS_DENIED_CIDRS },
          { publicStandIns: options.publicStandIns ?? [], hosts: options.publicHosts ?? {} },
          { [E2B_EMULATOR_LABEL]: this.containers.instance },
        );
      },
      cutStreams: (sandbox) => this.cutStreams(sandbox),
      ...(options.pauseMs ? { pauseMs: options.pauseMs } : {}),
    });
    this.processes = new EnvdProcesses({
      containers: this.containers,
      keepaliveMs: options.keepaliveMs,
      takeStartFailure: () => this.killFails > 0 && this.killFails-- > 0,
      takeStreamDrop: () => {
        if (this.dropStreams <= 0) return -1;
        this.dropStreams--;
        return this.dropAfterBytes;
      },
      streamDropped: () => {
        this.killFails += this.failStartsAfterDrop;
      },
      takeSilence: () => {
        if (this.silentStreams <= 0) return false;
        this.silentStreams--;
        this.killFails += this.failStartsAfterSilence;
        return true;
      },
    });
    this.files = new EnvdFiles(this.containers, options.filesBytesPerSecond);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) =>
        sendJson(res, 500, { code: 500, message: (error as Error).message.slice(0, 300) }),
      );
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const target = this.portTargetOfHost(req.headers.host);
      if (target === "unroutable") refuseUpgrade(socket, 502, "Bad Gateway");
      else if (target) proxyUpgrade(req, socket, head, target);
      else socket.destroy();
    });
  }

  async start(): Promise<this> {
    this.address = await listenLoopback(this.server);
    let sweeping = false;
    this.sweeper = setInterval(() => {
      if (sweeping) return;
      sweeping = true;
      void this.plane.sweep().finally(() => {
        sweeping = false;
      });
    }, this.options.sweepMs ?? 50);
    this.sweeper.unref();
    return this;
  }

  /** The control plane's URL (the SDK's `apiUrl`). */
  get apiUrl(): string {
    return this.address;
  }

  /** envd's URL for every sandbox (the SDK's `sandboxUrl`); the E2b-Sandbox-Id header picks the sandbox. */
  get sandboxUrl(): string {
    return this.address;
  }

  /** A URL that reaches `port` of sandbox `id` (a loopback listener opened when the sandbox was made). */
  portUrl(id: string, port: number): string {
    const listener = this.sandboxes.get(shortSandboxId(id) ?? id)?.portListeners.get(port);
    if (!listener) throw new Error(`The emulator has no port ${port} for sandbox ${id}; list it in ports.`);
    return listener.url;
  }

  /** The sandboxes the emulator knows, with what it recorded of them. */
  sandbox(id: string): SandboxView | undefined {
    return this.sandboxes.get(shortSandboxId(id) ?? id);
  }

  get sandboxIds(): string[] {
    return [...this.sandboxes.keys()];
  }

  /** The next control-plane requests (matching `fault.path`) answer `fault.status`. */
  injectControlPlaneFault(fault: ControlPlaneFault): void {
    const times = Math.max(fault.count ?? Number.POSITIVE_INFINITY, 1);
    this.faults.inject({ path: fault.path ?? /^/, status: fault.status, retryAfter: fault.retryAfter, times });
  }

  clearFaults(): void {
    this.faults.clear();
    this.dropStreams = 0;
    this.killFails = 0;
    this.silentStreams = 0;
  }

  /**
   * The next `count` process streams are cut after `afterBytes` bytes of
   * output (the process keeps running; 0 cuts before the start event reaches
   * the client, so it never learns the pid); with `thenFailStarts`, that many
   * process starts after each cut fail too (so a kill cannot be confirmed).
   */
  dropNextStreams(count = 1, afterBytes = 1, options: { thenFailStarts?: number } = {}): void {
    this.dropStreams = count;
    this.dropAfterBytes = afterBytes;
    this.failStartsAfterDrop = options.thenFailStarts ?? 0;
  }

  /**
   * The next `count` process streams go silent after their start event: no
   * output, no keepalive, no end, the connection left open and the process
   * running on, as an envd that stopped answering; with `thenFailStarts`,
   * that many process starts after each fail too (so a kill cannot be
   * confirmed).
   */
  silenceNextStreams(count = 1, options: { thenFailStarts?: number } = {}): void {
    this.silentStreams = count;
    this.failStartsAfterSilence = options.thenFailStarts ?? 0;
  }

  /** The next `count` process starts (such as a kill's helper) fail with 502. */
  failNextStarts(count: number): void {
    this.killFails = count;
  }

  /** The service forgets the sandbox and its container is removed, as if E2B lost it. */
  async vanish(id: string): Promise<void> {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) return;
    this.sandboxes.delete(id);
    await this.removeSandbox(sandbox);
  }

  /** How many processes of the sandbox run `pattern` (pgrep -f), for orphan checks. */
  async countProcesses(id: string, pattern: string): Promise<number> {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new Error(`no sandbox ${id}`);
    // pgrep alone, no shell: a pipeline's shell, and its fork for `wc` until
    // that execs, carry the pattern too, so "minus this sh" was off by one
    // now and then (clean-clone run 28: 1 after a confirmed kill).
    const argv = ["pgrep", "-c", "-f", "--", pattern];
    const { stdout } = await this.containers.run(sandbox.containerId, argv, { user: "0:0" });
    return Number(stdout.toString("utf8").trim());
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const sandbox of this.sandboxes.values()) await this.removeSandbox(sandbox);
    this.sandboxes.clear();
    await this.containers.removeAll();
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---------------------------------------------------------------- routing

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const portTarget = this.portTargetOfHost(req.headers.host);
    if (portTarget === "unroutable") {
      // proxy/template/sandbox_not_found.go: the edge cannot route to it.
      const sandboxId = /^\d+-([^.-]+)/.exec(req.headers.host ?? "")?.[1] ?? "";
      return sendJson(res, 502, { sandboxId, message: "The sandbox was not found", code: 502 });
    }
    if (portTarget) return proxyHttp(req, res, portTarget);
    const url = new URL(req.url ?? "/", "http://emulator");
    // E2B's header, or Novita's (its SDK is a fork that renamed them).
    const sandboxHeader = req.headers["e2b-sandbox-id"] ?? req.headers["novita-sandbox-id"];
    if (typeof sandboxHeader === "string") return this.envd(req, res, url, sandboxHeader);
    return this.controlPlane(req, res, url);
  }

  /**
   * `<port>-<id>[-...].<domain>`: the left-most label split on `-`, the
   * second part the id (infra packages/shared/pkg/proxy/host.go parseHost).
   */
  private portTargetOfHost(host: string | undefined): { host: string; port: number } | "unroutable" | undefined {
    const match = /^(\d+)-([^.-]+)[^.]*\./.exec(host ?? "");
    if (!match || !(host ?? "").includes(this.domain)) return undefined;
    const sandbox = this.sandboxes.get(match[2] as string);
    if (sandbox?.state !== "running") return "unroutable";
    return { host: sandbox.ip, port: Number(match[1]) };
  }

  private record(call: EmulatorCall): void {
    this.calls.push(call);
    if (this.calls.length > 5000) this.calls.splice(0, 1000);
  }

  // ---------------------------------------------------------- control plane

  private async controlPlane(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? "GET";
    const path = url.pathname;
    const body = (await readJson(req).catch(() => Symbol.for("not json"))) as Record<string, unknown> | undefined;
    const notJson = typeof body === "symbol";
    const exchange = this.recorder.request(method, path, {
      query: url.searchParams,
      body: notJson ? "(not JSON)" : body,
      headers: req.headers,
    });
    const reply = (status: number, payload?: unknown, headers: Record<string, string> = {}, injected = false) => {
      const sandboxId = /\/sandboxes\/([^/]+)/.exec(path)?.[1];
      this.record({ method, path, body: notJson ? undefined : body, status, sandboxId });
      // An injected fault is the service failing on purpose: not held to the definition.
      if (!injected) exchange.answer(status, payload);
      sendJson(res, status, payload, headers);
    };
    // auth middleware.go: an unknown key.
    if (req.headers["x-api-key"] !== this.options.apiKey) {
      const message = "Invalid API key, please visit https://e2b.dev/docs/api-key for more information.";
      return reply(401, { code: 401, message });
    }
    if (notJson) return reply(400, { code: 400, message: "Error when parsing request: the body is not JSON" });
    const fault = this.faults.take(method, path);
    if (fault) {
      const message = fault.status === 429 ? "rate limited" : "injected failure";
      const headers: Record<string, string> =
        fault.status === 429 && fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {};
      return reply(fault.status, { code: fault.status, message }, headers, true);
    }
    try {
      const [status, payload, headers] = await this.route(method, path, url, body ?? {}, body);
      reply(status, payload, headers);
    } catch (error) {
      if (!(error instanceof HttpAnswer)) throw error;
      reply(error.status, error.body);
    }
  }

  private route(
    method: string,
    path: string,
    url: URL,
    body: Record<string, unknown>,
    given: Record<string, unknown> | undefined,
  ): Answer | Promise<Answer> {
    const plane = this.plane;
    const id = /^(?:\/v2)?\/sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(path);
    const build = /^\/v2\/templates\/([^/]+)\/builds\/([^/]+)$/.exec(path);
    const status = /^\/templates\/[^/]+\/builds\/([^/]+)\/status$/.exec(path);
    const v2 = path.startsWith("/v2/");
    if (method === "POST" && path === "/v3/templates") return plane.requestBuild(body);
    if (method === "POST" && build) return plane.triggerBuild(build[1] as string, build[2] as string, body);
    if (method === "GET" && status) return plane.pollBuild(status[1] as string);
    if (method === "POST" && (path === "/v2/sandboxes" || path === "/sandboxes")) return plane.create(body, v2);
    if (method === "GET" && path === "/v2/sandboxes") return plane.list(url.searchParams);
    if (id && method === "POST" && id[2] === "/connect") return plane.connect(id[1] as string, given, v2);
    if (id && !v2 && method === "POST" && id[2] === "/pause") return plane.pause(id[1] as string);
    if (id && !v2 && method === "POST" && id[2] === "/timeout") return plane.setTimeout(id[1] as string, body);
    if (id && !v2 && method === "GET" && !id[2]) return plane.get(id[1] as string);
    if (id && !v2 && method === "DELETE" && !id[2]) return plane.kill(id[1] as string);
    return [404, { code: 404, message: `no route ${method} ${path}` }];
  }

  // ------------------------------------------------------------------- envd

  private async envd(req: IncomingMessage, res: ServerResponse, url: URL, rawId: string): Promise<void> {
    const method = req.method ?? "GET";
    const path = url.pathname;
    const rpc = path.startsWith("/process.") || path.startsWith("/filesystem.");
    const stream = STREAMS.includes(path) || path === "/filesystem.Filesystem/WatchDir";
    let body: unknown;
    if (rpc) {
      const raw = await readBody(req);
      try {
        body = stream ? parseEnvelopes(raw)[0] : raw.length > 0 ? JSON.parse(raw.toString("utf8")) : undefined;
      } catch {
        body = "(not JSON)";
      }
    }
    const exchange = this.recorder.request(method, path, { query: url.searchParams, body, headers: req.headers });
    const id = shortSandboxId(rawId) ?? rawId;
    const sandbox = this.sandboxes.get(id);
    const answer = (status: number, payload?: unknown) => {
      this.record({ method, path, sandboxId: id, status });
      exchange.answer(status, payload);
      if (!rpc) req.resume();
      sendJson(res, status, payload);
    };
    // proxy/template/sandbox_not_found.go: unknown, paused or killed, the edge answers 502.
    if (sandbox?.state !== "running")
      return answer(502, { sandboxId: id, message: "The sandbox was not found", code: 502 });
    // api/auth.go WithAuthorization: the token, on every path it does not exempt.
    const token = sandbox.envdAccessToken;
    if (token && req.headers["x-access-token"] !== token && !TOKEN_EXEMPT.includes(method + path)) {
      const message = "unauthorized access, please provide a valid access token or method signing if supported";
      return answer(401, { code: 401, message });
    }
    if (method === "GET" && path === "/health") return answer(204);
    if (path === "/files" && (method === "GET" || method === "POST")) {
      this.record({ method, path, sandboxId: id, status: 200 });
      return method === "GET"
        ? this.files.download(req, res, sandbox, url, exchange)
        : this.files.upload(req, res, sandbox, url, exchange);
    }
    if (!rpc) return answer(404, { code: 404, message: `no route ${method} ${path}` });
    return this.rpc(req, res, sandbox, path, (body ?? {}) as Record<string, unknown>, exchange, stream);
  }

  /** The Connect RPCs, after authn (permissions/authenticate.go: an unknown Basic user is refused). */
  private async rpc(
    req: IncomingMessage,
    res: ServerResponse,
    sandbox: EmulatedSandbox,
    path: string,
    body: Record<string, unknown>,
    exchange: Exchange,
    stream: boolean,
  ): Promise<void> {
    const record = (status: number) => this.record({ method: "POST", path, sandboxId: sandbox.id, status });
    const unary = (status: number, payload: unknown) => {
      record(status);
      exchange.answer(status, payload);
      sendJson(res, status, payload);
    };
    const fail = (failure: ConnectFailure) => {
      if (stream) {
        record(200);
        return new ProcessStream(res, exchange).finish(failure);
      }
      const { status, body: payload } = EnvdProcesses.failure(failure);
      unary(status, payload);
    };
    const basic = /^Basic (.*)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const named = basic === undefined ? undefined : Buffer.from(basic, "base64").toString("utf8").split(":")[0];
    if (named !== undefined && !(await lookUpUser(this.containers, sandbox, named)))
      return fail({ code: "unauthenticated", message: `invalid username: '${named}'` });
    const user = named || TEMPLATE_USER;
    const call = path.slice(path.lastIndexOf("/") + 1);
    if (path === "/process.Process/Start") {
      record(200);
      return this.processes.start(req, res, sandbox, body, user, exchange);
    }
    if (path === "/process.Process/Connect") {
      record(200);
      return this.processes.connect(req, res, sandbox, body, exchange);
    }
    if (!path.startsWith("/process.Process/") || !UNARY.includes(call)) {
      // Not emulated (StreamInput, the filesystem service): a 404, which connect-es reads as
      // unimplemented and the recorder reports as an answer the definition does not list.
      record(404);
      exchange.answer(404, undefined);
      return sendJson(res, 404, { code: "unimplemented", message: `${path} is not emulated` });
    }
    const result = await this.processes.unary(sandbox, call, body);
    if ("code" in result && typeof result.code === "string") return fail(result as ConnectFailure);
    unary(200, result);
  }

  // ---------------------------------------------------------------- sandboxes

  /** The edge stops routing a sandbox: the envd answers it was giving are cut. */
  private cutStreams(sandbox: EmulatedSandbox): void {
    for (const res of sandbox.streams) {
      res.socket?.destroy();
      res.destroy();
    }
    sandbox.streams.clear();
  }

  private async removeSandbox(sandbox: EmulatedSandbox): Promise<void> {
    this.cutStreams(sandbox);
    for (const listener of sandbox.portListeners.values()) listener.close();
    sandbox.portListeners.clear();
    if (sandbox.fenceContainerId) await this.containers.remove(sandbox.fenceContainerId);
    await this.containers.remove(sandbox.containerId);
  }
}
