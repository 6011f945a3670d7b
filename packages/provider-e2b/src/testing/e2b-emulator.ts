import { randomBytes } from "node:crypto";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { DockerOutputDemuxer, END_STREAM, envelope, parseEnvelopes } from "./connect-envelope.js";

/** The label on every container an emulator starts: its id, so `close` (or a sweep) finds them. */
export const E2B_EMULATOR_LABEL = "agent-computer.e2b-emulator";
/** The envd version the emulator reports: new enough for octet-stream uploads and the default user. */
export const EMULATED_ENVD_VERSION = "0.5.8";

export interface E2bEmulatorOptions {
  /** The Docker engine the sandboxes run on (a dockerode client). */
  docker: Docker;
  /** Templates by id, each a Docker image (the computer image for the computer template). */
  templates: Record<string, string>;
  /** The one API key the control plane accepts. */
  apiKey: string;
  /** Ports of each sandbox reachable through `portUrl` (default: the screen gateway's 6080 and 8080). */
  ports?: number[];
  /** The sandbox domain used in `<port>-<id>.<domain>` Host routing (default e2b.emulator). */
  domain?: string;
}

/** One control-plane or envd call, as the emulator saw it (never its headers: they carry the key and tokens). */
export interface EmulatorCall {
  method: string;
  path: string;
  sandboxId?: string;
  body?: unknown;
  status: number;
}

interface ProcessRecord {
  pid: number;
  stream?: Duplex;
  pidFile: string;
  /** SIGKILL or SIGTERM: stop waiting for the output to close; the end follows the leader's exit. */
  cancelOutput?: () => void;
}

interface EmulatedSandbox {
  id: string;
  templateId: string;
  containerId: string;
  ip: string;
  metadata: Record<string, string>;
  envdAccessToken: string;
  state: "running" | "paused";
  startedAt: Date;
  /** Every timeout the sandbox was given, in seconds: on create, on each connect, by setTimeout. */
  timeouts: (number | undefined)[];
  autoPause: boolean;
  processes: Map<number, ProcessRecord>;
  nextPid: number;
  portListeners: Map<number, { server: Server; url: string }>;
}

/** A template build the control plane was asked for. */
export interface EmulatedTemplateBuild {
  templateId: string;
  buildId: string;
  name: string;
  cpuCount?: number;
  memoryMB?: number;
  /** The image the build starts from (the trigger's fromImage). */
  fromImage?: string;
  status: "waiting" | "building" | "ready" | "error";
  /** Status polls answered so far. */
  polls: number;
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

/**
 * A loopback E2B (docs/architecture.md §12): the control-plane REST calls
 * the `e2b` SDK makes (create, connect, pause, kill, get, list with metadata
 * and paging, timeout) and envd's Connect-protocol JSON process service,
 * `/files` and `/health`, with the SDK's access-token headers, each sandbox
 * a real container of its template's image, so the shared desktop runtime
 * really runs. Port traffic (plain HTTP and websocket upgrades) reaches a
 * container's port through `portUrl(id, port)` or a `Host: <port>-<id>.<domain>`
 * request. It records what it was asked and injects faults. msw cannot
 * stand in: the SDK fetches through its own undici agent.
 */
export class E2bEmulator {
  readonly id = randomBytes(6).toString("hex");
  readonly calls: EmulatorCall[] = [];
  /** Template builds by build id. */
  readonly templateBuilds = new Map<string, EmulatedTemplateBuild>();
  private readonly templates: Record<string, string>;
  private readonly sandboxes = new Map<string, EmulatedSandbox>();
  private readonly server: Server;
  private readonly docker: Docker;
  private readonly ports: number[];
  readonly domain: string;
  private faults: ControlPlaneFault[] = [];
  private dropStreams = 0;
  private dropAfterBytes = 0;
  private killFails = 0;
  private failStartsAfterDrop = 0;
  private address = "";

  constructor(private readonly options: E2bEmulatorOptions) {
    this.docker = options.docker;
    this.templates = { ...options.templates };
    this.ports = options.ports ?? [6080, 8080];
    this.domain = options.domain ?? "e2b.emulator";
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.json(res, 500, { code: 500, message: (error as Error).message.slice(0, 300) });
        else res.destroy();
      });
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const target = this.portTargetOfHost(req.headers.host);
      if (!target) {
        socket.destroy();
        return;
      }
      proxyUpgrade(req, socket, head, target.ip, target.port);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const info = this.server.address() as { port: number };
    this.address = `http://127.0.0.1:${info.port}`;
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
    const listener = this.sandboxes.get(id)?.portListeners.get(port);
    if (!listener) throw new Error(`The emulator has no port ${port} for sandbox ${id}; list it in ports.`);
    return listener.url;
  }

  /** The sandboxes the emulator knows, with what it recorded of them. */
  sandbox(
    id: string,
  ):
    | Readonly<
        Pick<
          EmulatedSandbox,
          "id" | "state" | "metadata" | "timeouts" | "containerId" | "autoPause" | "envdAccessToken"
        >
      >
    | undefined {
    return this.sandboxes.get(id);
  }

  get sandboxIds(): string[] {
    return [...this.sandboxes.keys()];
  }

  /** The next control-plane requests (matching `fault.path`) answer `fault.status`. */
  injectControlPlaneFault(fault: ControlPlaneFault): void {
    this.faults.push({ ...fault });
  }

  clearFaults(): void {
    this.faults = [];
    this.dropStreams = 0;
    this.killFails = 0;
  }

  /**
   * The next `count` process streams are cut after `afterBytes` bytes of
   * output (the process keeps running); with `thenFailStarts`, that many
   * process starts after each cut fail too (so a kill cannot be confirmed).
   */
  dropNextStreams(count = 1, afterBytes = 1, options: { thenFailStarts?: number } = {}): void {
    this.dropStreams = count;
    this.dropAfterBytes = afterBytes;
    this.failStartsAfterDrop = options.thenFailStarts ?? 0;
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
    const out = await this.execCollect(sandbox, ["sh", "-c", `pgrep -f -- "$1" | wc -l`, "count", pattern], "0:0");
    return Number(out.trim()) - 1; // pgrep -f sees this sh too
  }

  async close(): Promise<void> {
    for (const sandbox of this.sandboxes.values()) await this.removeSandbox(sandbox);
    this.sandboxes.clear();
    const leftovers = await this.docker
      .listContainers({ all: true, filters: JSON.stringify({ label: [`${E2B_EMULATOR_LABEL}=${this.id}`] }) })
      .catch(() => []);
    for (const c of leftovers)
      await this.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---------------------------------------------------------------- routing

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const portTarget = this.portTargetOfHost(req.headers.host);
    if (portTarget) return proxyHttp(req, res, portTarget.ip, portTarget.port);
    const url = new URL(req.url ?? "/", "http://emulator");
    // E2B's header, or Novita's (its SDK is a fork that renamed them).
    const sandboxHeader = req.headers["e2b-sandbox-id"] ?? req.headers["novita-sandbox-id"];
    if (typeof sandboxHeader === "string") return this.envd(req, res, url, sandboxHeader);
    return this.controlPlane(req, res, url);
  }

  private portTargetOfHost(host: string | undefined): { ip: string; port: number } | undefined {
    const match = /^(\d+)-([A-Za-z0-9]+)\./.exec(host ?? "");
    if (!match || !(host ?? "").includes(this.domain)) return undefined;
    const sandbox = this.sandboxes.get(match[2] as string);
    if (sandbox?.state !== "running") return undefined;
    return { ip: sandbox.ip, port: Number(match[1]) };
  }

  private record(call: EmulatorCall): void {
    this.calls.push(call);
    if (this.calls.length > 5000) this.calls.splice(0, 1000);
  }

  private json(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
    if (body === undefined) {
      res.writeHead(status, { "content-length": 0, ...headers }).end();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  }

  // ---------------------------------------------------------- control plane

  private async controlPlane(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? "GET";
    const path = url.pathname;
    const raw = await readBody(req);
    const body = raw.length ? safeJson(raw) : undefined;
    const reply = (status: number, payload?: unknown, headers?: Record<string, string>) => {
      this.record({ method, path, body, status, sandboxId: /\/sandboxes\/([^/]+)/.exec(path)?.[1] });
      this.json(res, status, payload, headers);
    };
    if (req.headers["x-api-key"] !== this.options.apiKey) {
      return reply(401, { code: 401, message: "Invalid API key, it must start with 'e2b_'" });
    }
    const fault = this.faults.find((f) => !f.path || f.path.test(path));
    if (fault) {
      if (fault.count !== undefined && --fault.count <= 0) this.faults.splice(this.faults.indexOf(fault), 1);
      return reply(
        fault.status,
        { code: fault.status, message: fault.status === 429 ? "rate limited" : "injected failure" },
        fault.status === 429 && fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {},
      );
    }
    const on = (verb: string, route: RegExp) => (verb === "*" || method === verb ? route.exec(path) : null);
    const connect = on("POST", /^(?:\/v2)?\/sandboxes\/([^/]+)\/connect$/);
    const pause = on("POST", /^\/sandboxes\/([^/]+)\/pause$/);
    const timeout = on("POST", /^\/sandboxes\/([^/]+)\/timeout$/);
    const one = on("*", /^\/sandboxes\/([^/]+)$/);
    const trigger = on("POST", /^\/v2\/templates\/([^/]+)\/builds\/([^/]+)$/);
    const buildStatus = on("GET", /^\/templates\/([^/]+)\/builds\/([^/]+)\/status$/);
    if (method === "POST" && path === "/v3/templates") {
      const request = (body ?? {}) as { name?: string; cpuCount?: number; memoryMB?: number };
      const build: EmulatedTemplateBuild = {
        templateId: `t${randomBytes(8).toString("hex")}`,
        buildId: randomBytes(8).toString("hex"),
        name: String(request.name ?? ""),
        cpuCount: request.cpuCount,
        memoryMB: request.memoryMB,
        status: "waiting",
        polls: 0,
      };
      this.templateBuilds.set(build.buildId, build);
      return reply(202, {
        templateID: build.templateId,
        buildID: build.buildId,
        public: false,
        names: [build.name],
        aliases: [build.name],
        tags: [],
      });
    }
    if (trigger) {
      const build = this.templateBuilds.get(trigger[2] as string);
      if (!build || build.templateId !== trigger[1]) return reply(404, { code: 404, message: "build not found" });
      build.fromImage = (body as { fromImage?: string } | undefined)?.fromImage;
      build.status = "building";
      return reply(202);
    }
    if (buildStatus) {
      const build = this.templateBuilds.get(buildStatus[2] as string);
      if (!build) return reply(404, { code: 404, message: "build not found" });
      build.polls++;
      // One poll while building (with a log line), then ready: the template then starts sandboxes of its image.
      const logEntries =
        build.polls === 1
          ? [{ timestamp: new Date().toISOString(), level: "info", message: `Pulling ${build.fromImage}` }]
          : [];
      if (build.polls >= 2 && build.status === "building") {
        build.status = build.fromImage ? "ready" : "error";
        if (build.fromImage) {
          this.templates[build.name] = build.fromImage;
          this.templates[build.templateId] = build.fromImage;
        }
      }
      return reply(200, {
        templateID: build.templateId,
        buildID: build.buildId,
        status: build.status,
        logEntries,
        logs: logEntries.map((e) => e.message),
        ...(build.status === "error" ? { reason: { message: "no image to build from" } } : {}),
      });
    }
    // /v2/sandboxes is E2B's create; /sandboxes (v1) is Novita's.
    if (method === "POST" && (path === "/v2/sandboxes" || path === "/sandboxes"))
      return this.create(body as Record<string, unknown>, reply);
    if (method === "GET" && path === "/v2/sandboxes") return this.list(url, reply);
    if (connect) {
      const match = connect;
      const sandbox = this.sandboxes.get(match[1] as string);
      if (!sandbox) return reply(404, { code: 404, message: `sandbox "${match[1]}" not found` });
      const timeout = (body as { timeout?: number } | undefined)?.timeout;
      sandbox.timeouts.push(timeout);
      const resumed = sandbox.state === "paused";
      if (resumed) {
        await this.docker.getContainer(sandbox.containerId).unpause();
        sandbox.state = "running";
      }
      return reply(resumed ? 201 : 200, this.sandboxBody(sandbox));
    }
    if (pause) {
      const match = pause;
      const sandbox = this.sandboxes.get(match[1] as string);
      if (!sandbox) return reply(404, { code: 404, message: `sandbox "${match[1]}" not found` });
      if (sandbox.state === "paused") return reply(409, { code: 409, message: "sandbox is already paused" });
      await this.docker.getContainer(sandbox.containerId).pause();
      sandbox.state = "paused";
      return reply(204);
    }
    if (timeout) {
      const match = timeout;
      const sandbox = this.sandboxes.get(match[1] as string);
      if (!sandbox) return reply(404, { code: 404, message: `sandbox "${match[1]}" not found` });
      sandbox.timeouts.push((body as { timeout?: number } | undefined)?.timeout);
      return reply(204);
    }
    if (one) {
      const match = one;
      const sandbox = this.sandboxes.get(match[1] as string);
      if (!sandbox) return reply(404, { code: 404, message: `sandbox "${match[1]}" not found` });
      if (method === "DELETE") {
        this.sandboxes.delete(sandbox.id);
        await this.removeSandbox(sandbox);
        return reply(204);
      }
      if (method === "GET")
        return reply(200, { ...this.listedBody(sandbox), envdAccessToken: sandbox.envdAccessToken });
    }
    return reply(404, { code: 404, message: `no route ${method} ${path}` });
  }

  private async create(body: Record<string, unknown>, reply: (status: number, payload?: unknown) => void) {
    const templateId = String(body?.templateID ?? "");
    const image = this.templates[templateId];
    if (!image) return reply(404, { code: 404, message: `template '${templateId}' not found` });
    const id = `i${randomBytes(10).toString("hex")}`;
    const envVars = (body.envVars ?? {}) as Record<string, string>;
    const container = await this.docker.createContainer({
      name: `e2b-emulator-${this.id}-${id}`,
      Image: image,
      Cmd: ["sleep", "infinity"],
      User: "1000:1000",
      Env: Object.entries(envVars).map(([k, v]) => `${k}=${v}`),
      Labels: { [E2B_EMULATOR_LABEL]: this.id, "agent-computer.e2b-sandbox": id },
      HostConfig: {
        Init: true,
        ShmSize: COMPUTER_SHM_BYTES,
        SecurityOpt: [`seccomp=${computerSeccompProfile()}`],
      },
    });
    await container.start();
    const info = await container.inspect();
    const ip = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress ?? "";
    const sandbox: EmulatedSandbox = {
      id,
      templateId,
      containerId: container.id,
      ip,
      metadata: (body.metadata ?? {}) as Record<string, string>,
      envdAccessToken: randomBytes(24).toString("hex"),
      state: "running",
      startedAt: new Date(),
      timeouts: [typeof body.timeout === "number" ? body.timeout : undefined],
      autoPause: body.autoPause === true,
      processes: new Map(),
      nextPid: 1000,
      portListeners: new Map(),
    };
    this.sandboxes.set(id, sandbox);
    // E2B's templates run as "user" with its home at /home/user.
    await this.execCollect(
      sandbox,
      ["sh", "-c", "mkdir -p /home/user /tmp/.envd && chown 1000:1000 /home/user && chmod 1777 /tmp/.envd"],
      "0:0",
    );
    for (const port of this.ports) await this.openPortListener(sandbox, port);
    reply(201, this.sandboxBody(sandbox));
  }

  private list(url: URL, reply: (status: number, payload?: unknown, headers?: Record<string, string>) => void) {
    const wanted = new URLSearchParams(url.searchParams.get("metadata") ?? "");
    const filter = [...wanted.entries()].map(([k, v]) => [decodeURIComponent(k), decodeURIComponent(v)] as const);
    const states = (url.searchParams.get("state") ?? "running,paused").split(",");
    const limit = Number(url.searchParams.get("limit") ?? 100);
    const offset = Number(url.searchParams.get("nextToken") ?? 0);
    const matching = [...this.sandboxes.values()].filter(
      (s) => states.includes(s.state) && filter.every(([k, v]) => s.metadata[k] === v),
    );
    const page = matching.slice(offset, offset + limit);
    const more = offset + limit < matching.length;
    reply(
      200,
      page.map((s) => this.listedBody(s)),
      more ? { "x-next-token": String(offset + limit) } : {},
    );
  }

  private sandboxBody(sandbox: EmulatedSandbox) {
    return {
      templateID: sandbox.templateId,
      sandboxID: sandbox.id,
      clientID: "emulator",
      envdVersion: EMULATED_ENVD_VERSION,
      envdAccessToken: sandbox.envdAccessToken,
      trafficAccessToken: null,
      domain: null,
    };
  }

  private listedBody(sandbox: EmulatedSandbox) {
    // No clientID: Novita's SDK would append it to the id.
    return {
      templateID: sandbox.templateId,
      sandboxID: sandbox.id,
      startedAt: sandbox.startedAt.toISOString(),
      endAt: new Date(sandbox.startedAt.valueOf() + 3600_000).toISOString(),
      cpuCount: 2,
      memoryMB: 4096,
      diskSizeMB: 10240,
      metadata: sandbox.metadata,
      state: sandbox.state,
      envdVersion: EMULATED_ENVD_VERSION,
    };
  }

  // ------------------------------------------------------------------- envd

  private async envd(req: IncomingMessage, res: ServerResponse, url: URL, id: string): Promise<void> {
    const path = url.pathname;
    const sandbox = this.sandboxes.get(id);
    const record = (status: number) => this.record({ method: req.method ?? "GET", path, sandboxId: id, status });
    // E2B's edge answers 502 for a sandbox it cannot reach: unknown, paused or killed.
    if (sandbox?.state !== "running") {
      record(502);
      await readBody(req);
      return this.json(res, 502, { sandboxId: id, message: "The sandbox was not found", code: 502 });
    }
    if (req.headers["x-access-token"] !== sandbox.envdAccessToken) {
      record(401);
      await readBody(req);
      if (path.startsWith("/process."))
        return this.json(res, 401, { code: "unauthenticated", message: "invalid access token" });
      return this.json(res, 401, { code: 401, message: "invalid access token" });
    }
    const user = userOf(req.headers.authorization);
    if (path === "/health") {
      record(204);
      return this.json(res, 204);
    }
    if (path === "/files") {
      record(200);
      return req.method === "POST"
        ? this.writeFile(req, res, sandbox, url, user)
        : this.readFile(res, sandbox, url, user);
    }
    const body = await readBody(req);
    record(200);
    switch (path) {
      case "/process.Process/Start":
        return this.startProcess(res, sandbox, parseEnvelopes(body)[0] as StartRequest, user);
      case "/process.Process/SendInput": {
        const input = safeJson(body) as { process?: { pid?: number }; input?: { stdin?: string } };
        const proc = sandbox.processes.get(Number(input.process?.pid));
        if (!proc?.stream) return this.json(res, 404, { code: "not_found", message: "process not found" });
        proc.stream.write(Buffer.from(input.input?.stdin ?? "", "base64"));
        return this.json(res, 200, {});
      }
      case "/process.Process/CloseStdin": {
        const input = safeJson(body) as { process?: { pid?: number } };
        const proc = sandbox.processes.get(Number(input.process?.pid));
        if (!proc?.stream) return this.json(res, 404, { code: "not_found", message: "process not found" });
        proc.stream.end();
        return this.json(res, 200, {});
      }
      case "/process.Process/SendSignal": {
        const input = safeJson(body) as { process?: { pid?: number }; signal?: string };
        const proc = sandbox.processes.get(Number(input.process?.pid));
        if (!proc) return this.json(res, 404, { code: "not_found", message: "process not found" });
        // Like envd: the signal reaches the leader only (E2B #500).
        const signal = input.signal === "SIGNAL_SIGTERM" ? "TERM" : "KILL";
        proc.cancelOutput?.();
        await this.execCollect(sandbox, ["sh", "-c", `kill -${signal} "$(cat "$1")"`, "signal", proc.pidFile], "0:0");
        return this.json(res, 200, {});
      }
      default:
        return this.json(res, 404, { code: "unimplemented", message: `${path} is not emulated` });
    }
  }

  private async startProcess(res: ServerResponse, sandbox: EmulatedSandbox, request: StartRequest, user: string) {
    if (this.killFails > 0) {
      this.killFails--;
      return this.json(res, 502, { sandboxId: sandbox.id, message: "injected failure", code: 502 });
    }
    const pid = sandbox.nextPid++;
    const pidFile = `/tmp/.envd/${pid}.pid`;
    const config = request.process ?? { cmd: "true" };
    const withStdin = request.stdin === true;
    const container = this.docker.getContainer(sandbox.containerId);
    const home = user === "root" ? "/root" : "/home/user";
    const exec = await container.exec({
      // The leader writes its pid where SendSignal finds it, then becomes the command.
      Cmd: ["/bin/sh", "-c", 'echo $$ > "$0"; exec "$@"', pidFile, config.cmd, ...(config.args ?? [])],
      Env: [`HOME=${home}`, `USER=${user}`, ...Object.entries(config.envs ?? {}).map(([k, v]) => `${k}=${v}`)],
      WorkingDir: config.cwd || home,
      User: user === "root" ? "0:0" : "1000:1000",
      AttachStdin: withStdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    let stream: Duplex;
    try {
      stream = (await exec.start({ hijack: withStdin, stdin: withStdin })) as Duplex;
    } catch (error) {
      return this.json(res, 400, { code: "invalid_argument", message: (error as Error).message.slice(0, 300) });
    }
    const proc: ProcessRecord = { pid, stream: withStdin ? stream : undefined, pidFile };
    sandbox.processes.set(pid, proc);
    res.writeHead(200, { "content-type": "application/connect+json" });
    res.write(envelope({ event: { start: { pid } } }));
    let drop = -1;
    if (this.dropStreams > 0) {
      this.dropStreams--;
      drop = this.dropAfterBytes;
    }
    let sent = 0;
    let ended = false;
    const demuxer = new DockerOutputDemuxer((name, payload) => {
      if (ended) return;
      res.write(envelope({ event: { data: { [name]: payload.toString("base64") } } }));
      sent += payload.length;
      if (drop >= 0 && sent >= drop) {
        // A dropped stream: the connection is cut, the process keeps running (as when a proxy drops it).
        ended = true;
        drop = -1;
        this.killFails += this.failStartsAfterDrop;
        res.socket?.destroy();
      }
    });
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    stream.on("error", () => {});
    const finish = async () => {
      if (ended) return;
      ended = true;
      sandbox.processes.delete(pid);
      const state = await exec.inspect().catch(() => undefined);
      const exitCode = state?.ExitCode ?? -1;
      res.write(envelope({ event: { end: { exitCode, exited: true, status: `exit status ${exitCode}` } } }));
      res.end(envelope({}, END_STREAM));
      stream.destroy();
    };
    // envd's Wait sends the end event once the output pipes close, so a background child
    // holding them keeps the command open; SIGKILL or SIGTERM cancels that wait, and the
    // end follows the leader's exit (infra packages/envd/internal/services/process/handler/handler.go: Wait, SendSignal).
    stream.once("end", () => void finish());
    let poll: NodeJS.Timeout | undefined;
    proc.cancelOutput = () => {
      poll ??= setInterval(async () => {
        const state = await exec.inspect().catch(() => undefined);
        if (state && !state.Running) {
          clearInterval(poll);
          await finish();
        }
      }, 100);
    };
    res.once("close", () => {
      clearInterval(poll);
      if (!ended) {
        ended = true;
        stream.destroy();
      }
    });
  }

  private async readFile(res: ServerResponse, sandbox: EmulatedSandbox, url: URL, user: string) {
    const path = this.filePath(url, user);
    const container = this.docker.getContainer(sandbox.containerId);
    const exec = await container.exec({
      Cmd: ["sh", "-c", '[ -f "$1" ] || exit 66; exec cat -- "$1"', "read", path],
      User: user === "root" ? "0:0" : "1000:1000",
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: false })) as Duplex;
    let started = false;
    let waiting = false;
    const demuxer = new DockerOutputDemuxer((name, payload) => {
      if (name !== "stdout") return;
      if (!started) {
        started = true;
        res.writeHead(200, { "content-type": "application/octet-stream" });
      }
      if (!res.write(payload) && !waiting) {
        waiting = true;
        stream.pause();
        res.once("drain", () => {
          waiting = false;
          stream.resume();
        });
      }
    });
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    // A client gone mid-download must not leave the engine's stream paused: the engine then
    // never finishes the exec, and every later exec in the sandbox hangs.
    res.once("close", () => stream.resume());
    await new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
    const state = await exec.inspect();
    if (started) return void res.end();
    if (state.ExitCode === 66) return this.json(res, 404, { code: 404, message: `path '${path}' does not exist` });
    if (state.ExitCode !== 0) return this.json(res, 500, { code: 500, message: `could not read '${path}'` });
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 0 }).end();
  }

  private async writeFile(req: IncomingMessage, res: ServerResponse, sandbox: EmulatedSandbox, url: URL, user: string) {
    const container = this.docker.getContainer(sandbox.containerId);
    const contentType = req.headers["content-type"] ?? "";
    let path = this.filePath(url, user);
    let buffered: Buffer | undefined;
    if (contentType.startsWith("multipart/form-data")) {
      const part = parseSingleFilePart(await readBody(req), contentType);
      if (!part) return this.json(res, 400, { code: 400, message: "no file part" });
      buffered = part.data;
      if (!url.searchParams.get("path"))
        path = this.filePath(new URL(`http://x/?path=${encodeURIComponent(part.filename)}`), user);
    }
    const exec = await container.exec({
      Cmd: ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "write", path],
      User: user === "root" ? "0:0" : "1000:1000",
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    stream.on("data", () => {});
    const done = new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
    if (buffered) stream.end(buffered);
    else req.pipe(stream);
    await done;
    const state = await exec.inspect();
    if (state.ExitCode !== 0) return this.json(res, 500, { code: 500, message: `could not write '${path}'` });
    this.json(res, 200, [{ name: path.split("/").pop(), type: "file", path }]);
  }

  private filePath(url: URL, user: string): string {
    const path = url.searchParams.get("path") ?? "";
    if (path.startsWith("/")) return path;
    return `${user === "root" ? "/root" : "/home/user"}/${path}`;
  }

  // -------------------------------------------------------------- plumbing

  private async openPortListener(sandbox: EmulatedSandbox, port: number): Promise<void> {
    const server = createServer((req, res) => {
      if (this.sandboxes.get(sandbox.id)?.state !== "running") {
        res.writeHead(502).end("sandbox not running");
        return;
      }
      proxyHttp(req, res, sandbox.ip, port);
    });
    server.on("upgrade", (req: IncomingMessage, socket: Socket, head: Buffer) => {
      if (this.sandboxes.get(sandbox.id)?.state !== "running") {
        socket.destroy();
        return;
      }
      proxyUpgrade(req, socket, head, sandbox.ip, port);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port: local } = server.address() as { port: number };
    sandbox.portListeners.set(port, { server, url: `http://127.0.0.1:${local}` });
  }

  private async removeSandbox(sandbox: EmulatedSandbox): Promise<void> {
    for (const { server } of sandbox.portListeners.values()) {
      server.closeAllConnections?.();
      server.close();
    }
    sandbox.portListeners.clear();
    const container = this.docker.getContainer(sandbox.containerId);
    if (sandbox.state === "paused") await container.unpause().catch(() => {});
    await container.remove({ force: true }).catch(() => {});
  }

  private async execCollect(sandbox: EmulatedSandbox, argv: string[], user: string): Promise<string> {
    const exec = await this.docker.getContainer(sandbox.containerId).exec({
      Cmd: argv,
      User: user,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: false })) as Duplex;
    const out: Buffer[] = [];
    const demuxer = new DockerOutputDemuxer((name, payload) => {
      if (name === "stdout") out.push(Buffer.from(payload));
    });
    await new Promise<void>((resolve) => {
      stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
    return Buffer.concat(out).toString("utf8");
  }
}

interface StartRequest {
  process?: { cmd: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
  stdin?: boolean;
}

function userOf(authorization: string | undefined): string {
  const match = /^Basic (.+)$/.exec(authorization ?? "");
  if (!match) return "user";
  return (
    Buffer.from(match[1] as string, "base64")
      .toString("utf8")
      .split(":")[0] || "user"
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

function safeJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    return undefined;
  }
}

function parseSingleFilePart(body: Buffer, contentType: string): { filename: string; data: Buffer } | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  const mark = Buffer.from(`--${boundary?.[1] ?? boundary?.[2]}`);
  const start = body.indexOf(mark);
  if (start < 0) return undefined;
  const headerEnd = body.indexOf("\r\n\r\n", start);
  const headers = body.subarray(start, headerEnd).toString("utf8");
  const end = body.indexOf(Buffer.concat([Buffer.from("\r\n"), mark]), headerEnd);
  const filename = /filename="([^"]*)"/.exec(headers)?.[1] ?? "";
  return { filename, data: body.subarray(headerEnd + 4, end) };
}

function proxyHttp(req: IncomingMessage, res: ServerResponse, ip: string, port: number): void {
  const upstream = httpRequest(
    { host: ip, port, method: req.method, path: req.url, headers: { ...req.headers, host: `${ip}:${port}` } },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502).end("port unreachable");
    else res.destroy();
  });
  req.pipe(upstream);
}

function proxyUpgrade(req: IncomingMessage, socket: Socket, head: Buffer, ip: string, port: number): void {
  const upstream = netConnect(port, ip, () => {
    const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      const value = name.toLowerCase() === "host" ? `${ip}:${port}` : (req.rawHeaders[i + 1] as string);
      lines.push(`${name}: ${value}`);
    }
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  const close = () => {
    upstream.destroy();
    socket.destroy();
  };
  upstream.on("error", close);
  socket.on("error", close);
  upstream.on("close", close);
  socket.on("close", close);
}
