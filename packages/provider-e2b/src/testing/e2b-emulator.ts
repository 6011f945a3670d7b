import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import {
  ComputerContainers,
  demuxEngineStream,
  FaultRules,
  forwardPort,
  HttpAnswer,
  listenLoopback,
  parseSingleFilePart,
  pipeStdout,
  proxyHttp,
  proxyUpgrade,
  readBody,
  readJson,
  sendJson,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { END_STREAM, envelope, parseEnvelopes } from "./connect-envelope.js";

/** The exit code of the read script when the path is not a file. */
const NO_SUCH_FILE = 66;

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
  portListeners: Map<number, { url: string; close: () => void }>;
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

type SandboxView = Readonly<
  Pick<EmulatedSandbox, "id" | "state" | "metadata" | "timeouts" | "containerId" | "autoPause" | "envdAccessToken">
>;
type Reply = (status: number, payload?: unknown, headers?: Record<string, string>) => void;
type Body = Record<string, unknown> | undefined;

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
  /** The label value on this emulator's containers. */
  readonly id: string;
  readonly calls: EmulatorCall[] = [];
  /** Template builds by build id. */
  readonly templateBuilds = new Map<string, EmulatedTemplateBuild>();
  readonly domain: string;
  private readonly templates: Record<string, string>;
  private readonly sandboxes = new Map<string, EmulatedSandbox>();
  private readonly containers: ComputerContainers;
  private readonly faults = new FaultRules();
  private readonly server: Server;
  private readonly ports: number[];
  private dropStreams = 0;
  private dropAfterBytes = 0;
  private killFails = 0;
  private failStartsAfterDrop = 0;
  private address = "";

  constructor(private readonly options: E2bEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, E2B_EMULATOR_LABEL);
    this.id = this.containers.instance;
    this.templates = { ...options.templates };
    this.ports = options.ports ?? [6080, 8080];
    this.domain = options.domain ?? "e2b.emulator";
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) =>
        sendJson(res, 500, { code: 500, message: (error as Error).message.slice(0, 300) }),
      );
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const target = this.portTargetOfHost(req.headers.host);
      if (target) proxyUpgrade(req, socket, head, target);
      else socket.destroy();
    });
  }

  async start(): Promise<this> {
    this.address = await listenLoopback(this.server);
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
  sandbox(id: string): SandboxView | undefined {
    return this.sandboxes.get(id);
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
    const argv = ["sh", "-c", `pgrep -f -- "$1" | wc -l`, "count", pattern];
    const { stdout } = await this.containers.run(sandbox.containerId, argv, { user: "0:0" });
    return Number(stdout.toString("utf8").trim()) - 1; // pgrep -f sees this sh too
  }

  async close(): Promise<void> {
    for (const sandbox of this.sandboxes.values()) await this.removeSandbox(sandbox);
    this.sandboxes.clear();
    await this.containers.removeAll();
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---------------------------------------------------------------- routing

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const portTarget = this.portTargetOfHost(req.headers.host);
    if (portTarget) return proxyHttp(req, res, portTarget);
    const url = new URL(req.url ?? "/", "http://emulator");
    // E2B's header, or Novita's (its SDK is a fork that renamed them).
    const sandboxHeader = req.headers["e2b-sandbox-id"] ?? req.headers["novita-sandbox-id"];
    if (typeof sandboxHeader === "string") return this.envd(req, res, url, sandboxHeader);
    return this.controlPlane(req, res, url);
  }

  private portTargetOfHost(host: string | undefined): { host: string; port: number } | undefined {
    const match = /^(\d+)-([A-Za-z0-9]+)\./.exec(host ?? "");
    if (!match || !(host ?? "").includes(this.domain)) return undefined;
    const sandbox = this.sandboxes.get(match[2] as string);
    if (sandbox?.state !== "running") return undefined;
    return { host: sandbox.ip, port: Number(match[1]) };
  }

  private record(call: EmulatorCall): void {
    this.calls.push(call);
    if (this.calls.length > 5000) this.calls.splice(0, 1000);
  }

  /** The sandbox with this id; a 404 answers for one the service does not know. */
  private find(id: string | undefined): EmulatedSandbox {
    const sandbox = this.sandboxes.get(id as string);
    if (!sandbox) throw new HttpAnswer(404, { code: 404, message: `sandbox "${id}" not found` });
    return sandbox;
  }

  // ---------------------------------------------------------- control plane

  private async controlPlane(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? "GET";
    const path = url.pathname;
    // A body that is not JSON is taken as none.
    const body = (await readJson(req).catch(() => undefined)) as Body;
    const reply: Reply = (status, payload, headers) => {
      this.record({ method, path, body, status, sandboxId: /\/sandboxes\/([^/]+)/.exec(path)?.[1] });
      sendJson(res, status, payload, headers);
    };
    if (req.headers["x-api-key"] !== this.options.apiKey) {
      return reply(401, { code: 401, message: "Invalid API key, it must start with 'e2b_'" });
    }
    const fault = this.faults.take(method, path);
    if (fault) {
      return reply(
        fault.status,
        { code: fault.status, message: fault.status === 429 ? "rate limited" : "injected failure" },
        fault.status === 429 && fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {},
      );
    }
    const routes: [string, RegExp, (match: RegExpExecArray) => unknown][] = [
      ["POST", /^\/v3\/templates$/, () => reply(202, this.requestBuild(body))],
      ["POST", /^\/v2\/templates\/([^/]+)\/builds\/([^/]+)$/, (m) => reply(this.triggerBuild(m, body))],
      ["GET", /^\/templates\/([^/]+)\/builds\/([^/]+)\/status$/, (m) => reply(200, this.pollBuild(m[2] as string))],
      // /v2/sandboxes is E2B's create; /sandboxes (v1) is Novita's.
      ["POST", /^(?:\/v2)?\/sandboxes$/, () => this.create(body ?? {}, reply)],
      ["GET", /^\/v2\/sandboxes$/, () => this.list(url, reply)],
      ["POST", /^(?:\/v2)?\/sandboxes\/([^/]+)\/connect$/, (m) => this.connect(this.find(m[1]), body, reply)],
      ["POST", /^\/sandboxes\/([^/]+)\/pause$/, (m) => this.pause(this.find(m[1]), reply)],
      [
        "POST",
        /^\/sandboxes\/([^/]+)\/timeout$/,
        (m) => {
          this.find(m[1]).timeouts.push(body?.timeout as number | undefined);
          reply(204);
        },
      ],
      ["*", /^\/sandboxes\/([^/]+)$/, (m) => this.getOrKill(method, path, this.find(m[1]), reply)],
    ];
    try {
      for (const [verb, route, run] of routes) {
        const match = verb === "*" || verb === method ? route.exec(path) : null;
        if (match) return void (await run(match));
      }
      reply(404, { code: 404, message: `no route ${method} ${path}` });
    } catch (error) {
      if (!(error instanceof HttpAnswer)) throw error;
      reply(error.status, error.body);
    }
  }

  /** Connects to a sandbox, resuming a paused one (201); each connect's timeout is recorded. */
  private async connect(sandbox: EmulatedSandbox, body: Body, reply: Reply) {
    sandbox.timeouts.push(body?.timeout as number | undefined);
    const resumed = sandbox.state === "paused";
    if (resumed) {
      await this.containers.unpause(sandbox.containerId);
      sandbox.state = "running";
    }
    reply(resumed ? 201 : 200, this.sandboxBody(sandbox));
  }

  private async pause(sandbox: EmulatedSandbox, reply: Reply) {
    if (sandbox.state === "paused") return reply(409, { code: 409, message: "sandbox is already paused" });
    await this.containers.pause(sandbox.containerId);
    sandbox.state = "paused";
    reply(204);
  }

  private async getOrKill(method: string, path: string, sandbox: EmulatedSandbox, reply: Reply) {
    if (method === "GET") return reply(200, { ...this.listedBody(sandbox), envdAccessToken: sandbox.envdAccessToken });
    if (method !== "DELETE") return reply(404, { code: 404, message: `no route ${method} ${path}` });
    this.sandboxes.delete(sandbox.id);
    await this.removeSandbox(sandbox);
    reply(204);
  }

  private requestBuild(body: Body) {
    const build: EmulatedTemplateBuild = {
      templateId: `t${randomBytes(8).toString("hex")}`,
      buildId: randomBytes(8).toString("hex"),
      name: String(body?.name ?? ""),
      cpuCount: body?.cpuCount as number | undefined,
      memoryMB: body?.memoryMB as number | undefined,
      status: "waiting",
      polls: 0,
    };
    this.templateBuilds.set(build.buildId, build);
    const { templateId: templateID, buildId: buildID, name } = build;
    return { templateID, buildID, public: false, names: [name], aliases: [name], tags: [] };
  }

  /** Starts a build from the trigger's image; gives the answer's status. */
  private triggerBuild(match: RegExpExecArray, body: Body): number {
    const build = this.templateBuilds.get(match[2] as string);
    if (!build || build.templateId !== match[1]) throw new HttpAnswer(404, { code: 404, message: "build not found" });
    build.fromImage = body?.fromImage as string | undefined;
    build.status = "building";
    return 202;
  }

  private pollBuild(buildId: string) {
    const build = this.templateBuilds.get(buildId);
    if (!build) throw new HttpAnswer(404, { code: 404, message: "build not found" });
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
    return {
      templateID: build.templateId,
      buildID: build.buildId,
      status: build.status,
      logEntries,
      logs: logEntries.map((e) => e.message),
      ...(build.status === "error" ? { reason: { message: "no image to build from" } } : {}),
    };
  }

  private async create(body: Record<string, unknown>, reply: Reply) {
    const templateId = String(body.templateID ?? "");
    const image = this.templates[templateId];
    if (!image) return reply(404, { code: 404, message: `template '${templateId}' not found` });
    const id = `i${randomBytes(10).toString("hex")}`;
    // As the emulator always made them: uid 1000, Docker's default capabilities and no no-new-privileges
    // (not hardened), on the default network.
    const { id: containerId, ip } = await this.containers.create({
      image,
      name: id,
      labels: { "agent-computer.e2b-sandbox": id },
      user: "1000:1000",
      env: (body.envVars ?? {}) as Record<string, string>,
      hardened: false,
      shmBytes: COMPUTER_SHM_BYTES,
      seccompProfile: computerSeccompProfile(),
    });
    const sandbox: EmulatedSandbox = {
      id,
      templateId,
      containerId,
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
    const setup = "mkdir -p /home/user /tmp/.envd && chown 1000:1000 /home/user && chmod 1777 /tmp/.envd";
    await this.containers.run(containerId, ["sh", "-c", setup], { user: "0:0" });
    const running = () => this.sandboxes.get(id)?.state === "running";
    for (const port of this.ports) sandbox.portListeners.set(port, await forwardPort({ host: ip, port }, running));
    reply(201, this.sandboxBody(sandbox));
  }

  private list(url: URL, reply: Reply) {
    const wanted = new URLSearchParams(url.searchParams.get("metadata") ?? "");
    const filter = [...wanted.entries()].map(([k, v]) => [decodeURIComponent(k), decodeURIComponent(v)] as const);
    const states = (url.searchParams.get("state") ?? "running,paused").split(",");
    const limit = Number(url.searchParams.get("limit") ?? 100);
    const offset = Number(url.searchParams.get("nextToken") ?? 0);
    const matching = [...this.sandboxes.values()].filter(
      (s) => states.includes(s.state) && filter.every(([k, v]) => s.metadata[k] === v),
    );
    const page = matching.slice(offset, offset + limit).map((s) => this.listedBody(s));
    reply(200, page, offset + limit < matching.length ? { "x-next-token": String(offset + limit) } : {});
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
      return sendJson(res, 502, { sandboxId: id, message: "The sandbox was not found", code: 502 });
    }
    if (req.headers["x-access-token"] !== sandbox.envdAccessToken) {
      record(401);
      await readBody(req);
      const code = path.startsWith("/process.") ? "unauthenticated" : 401;
      return sendJson(res, 401, { code, message: "invalid access token" });
    }
    const user = userOf(req.headers.authorization);
    if (path === "/health") {
      record(204);
      return sendJson(res, 204);
    }
    if (path === "/files") {
      record(200);
      return req.method === "POST"
        ? this.writeFile(req, res, sandbox, url, user)
        : this.readFile(res, sandbox, url, user);
    }
    if (path === "/process.Process/Start") {
      const body = await readBody(req);
      record(200);
      return this.startProcess(res, sandbox, parseEnvelopes(body)[0] as StartRequest, user);
    }
    // A body that is not JSON is taken as none.
    const input = (await readJson(req).catch(() => undefined)) as ProcessInput;
    record(200);
    const call = path.slice("/process.Process/".length);
    if (!path.startsWith("/process.Process/") || !["SendInput", "CloseStdin", "SendSignal"].includes(call))
      return sendJson(res, 404, { code: "unimplemented", message: `${path} is not emulated` });
    const proc = sandbox.processes.get(Number(input.process?.pid));
    if (!proc || (call !== "SendSignal" && !proc.stream))
      return sendJson(res, 404, { code: "not_found", message: "process not found" });
    if (call === "SendInput") proc.stream?.write(Buffer.from(input.input?.stdin ?? "", "base64"));
    if (call === "CloseStdin") proc.stream?.end();
    if (call === "SendSignal") {
      // Like envd: the signal reaches the leader only (E2B #500).
      const signal = input.signal === "SIGNAL_SIGTERM" ? "TERM" : "KILL";
      proc.cancelOutput?.();
      const argv = ["sh", "-c", `kill -${signal} "$(cat "$1")"`, "signal", proc.pidFile];
      await this.containers.run(sandbox.containerId, argv, { user: "0:0" });
    }
    sendJson(res, 200, {});
  }

  private async startProcess(res: ServerResponse, sandbox: EmulatedSandbox, request: StartRequest, user: string) {
    if (this.killFails > 0) {
      this.killFails--;
      return sendJson(res, 502, { sandboxId: sandbox.id, message: "injected failure", code: 502 });
    }
    const pid = sandbox.nextPid++;
    const pidFile = `/tmp/.envd/${pid}.pid`;
    const config = request.process ?? { cmd: "true" };
    const withStdin = request.stdin === true;
    const home = homeOf(user);
    // The leader writes its pid where SendSignal finds it, then becomes the command.
    const argv = ["/bin/sh", "-c", 'echo $$ > "$0"; exec "$@"', pidFile, config.cmd, ...(config.args ?? [])];
    const env = { HOME: home, USER: user, ...config.envs };
    const options = { user: uidOf(user), env, workingDir: config.cwd || home, stdin: withStdin };
    const started = await this.containers.startCommand(sandbox.containerId, argv, options).catch((e: Error) => e);
    if (started instanceof Error)
      return sendJson(res, 400, { code: "invalid_argument", message: started.message.slice(0, 300) });
    const { exec, stream } = started;
    const proc: ProcessRecord = { stream: withStdin ? stream : undefined, pidFile };
    sandbox.processes.set(pid, proc);
    res.writeHead(200, { "content-type": "application/connect+json" });
    res.write(envelope({ event: { start: { pid } } }));
    let drop = this.dropStreams > 0 ? this.dropAfterBytes : -1;
    this.dropStreams = Math.max(0, this.dropStreams - 1);
    let sent = 0;
    let ended = false;
    const send = (name: "stdout" | "stderr") => (payload: Buffer) => {
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
    };
    demuxEngineStream(stream, send("stdout"), send("stderr"));
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
    let started = false;
    const open = () => {
      if (!started) res.writeHead(200, { "content-type": "application/octet-stream" });
      started = true;
    };
    const argv = ["sh", "-c", `[ -f "$1" ] || exit ${NO_SUCH_FILE}; exec cat -- "$1"`, "read", path];
    const read = await pipeStdout(this.containers, sandbox.containerId, argv, { user: uidOf(user) }, res, open);
    if (started) return void res.end();
    if (read.exitCode === NO_SUCH_FILE)
      return sendJson(res, 404, { code: 404, message: `path '${path}' does not exist` });
    if (read.exitCode !== 0) return sendJson(res, 500, { code: 500, message: `could not read '${path}'` });
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 0 }).end();
  }

  private async writeFile(req: IncomingMessage, res: ServerResponse, sandbox: EmulatedSandbox, url: URL, user: string) {
    const contentType = req.headers["content-type"] ?? "";
    let path = this.filePath(url, user);
    let body: Buffer | IncomingMessage = req;
    if (contentType.startsWith("multipart/form-data")) {
      const part = parseSingleFilePart(await readBody(req), contentType);
      if (!part) return sendJson(res, 400, { code: 400, message: "no file part" });
      body = part.data;
      if (!url.searchParams.get("path"))
        path = this.filePath(new URL(`http://x/?path=${encodeURIComponent(part.filename)}`), user);
    }
    const argv = ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "write", path];
    const written = await this.containers.run(sandbox.containerId, argv, { user: uidOf(user), input: body });
    if (written.exitCode !== 0) return sendJson(res, 500, { code: 500, message: `could not write '${path}'` });
    sendJson(res, 200, [{ name: path.split("/").pop(), type: "file", path }]);
  }

  private filePath(url: URL, user: string): string {
    const path = url.searchParams.get("path") ?? "";
    return path.startsWith("/") ? path : `${homeOf(user)}/${path}`;
  }

  private async removeSandbox(sandbox: EmulatedSandbox): Promise<void> {
    for (const listener of sandbox.portListeners.values()) listener.close();
    sandbox.portListeners.clear();
    await this.containers.remove(sandbox.containerId);
  }
}

interface StartRequest {
  process?: { cmd: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
  stdin?: boolean;
}

type ProcessInput = { process?: { pid?: number }; input?: { stdin?: string }; signal?: string };

function userOf(authorization: string | undefined): string {
  const match = /^Basic (.+)$/.exec(authorization ?? "");
  if (!match) return "user";
  return (
    Buffer.from(match[1] as string, "base64")
      .toString("utf8")
      .split(":")[0] || "user"
  );
}

const uidOf = (user: string) => (user === "root" ? "0:0" : "1000:1000");
const homeOf = (user: string) => (user === "root" ? "/root" : "/home/user");
