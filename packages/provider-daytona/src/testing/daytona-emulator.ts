import { randomBytes } from "node:crypto";
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type FaultRule,
  FaultRules,
  HttpAnswer,
  type LoopbackServer,
  LoopbackServers,
  readBody,
  readJson,
  refuseUpgrade,
  ServiceRecorder,
  sendJson,
  startFence,
  type Violation,
} from "@agent-computer/testing/emulator";
import { WebSocketServer } from "ws";
import { DAYTONA_OPERATIONS } from "./daytona-definition.js";
import type { DaytonaEmulatorOptions, EmulatedSandboxState } from "./daytona-emulator-options.js";
import { networkSettingsOf } from "./daytona-network-fence.js";
import { EMULATOR_LABEL, Sandbox, type SandboxHost } from "./daytona-sandbox.js";
import { type PreviewGrant, PreviewProxy } from "./preview-proxy.js";
import { PreviewTunnels } from "./preview-tunnel.js";
import { SandboxLifecycle } from "./sandbox-lifecycle.js";
import { SocketIoChannel } from "./socket-io-channel.js";

/** The proxy domain of the emulator's signed preview URLs (`https://<port>-<token>.<domain>`). */
export const PREVIEW_DOMAIN = "proxy.daytona.test";

/**
 * A loopback Daytona for tests (docs/architecture.md §12): a real HTTP
 * server speaking the calls `@daytonaio/sdk` 0.218 makes for the provider,
 * held to what daytonaio/daytona v0.190.0 does (each behaviour cites its
 * source where it is modelled):
 *
 * - the REST API with the sandbox state machine (sandbox-lifecycle.ts:
 *   409 while a change is pending, 400 for a stop of a stopped sandbox, the
 *   pausing/paused/resuming/snapshotting/forking states) and the API's
 *   error body;
 * - the toolbox daemon's sessions (daemon-session.ts): a long-lived shell
 *   per session in the container, each command's files under
 *   `$HOME/.daytona/sessions`, its log labelled line by line, the log
 *   websocket that ends a second after the exit code, 410 for input to a
 *   command whose exit code the daemon knows;
 * - the preview proxy (preview-proxy.ts): signed URLs in host form
 *   `https://<port>-<token>.proxy.daytona.test`, reached through
 *   `previewTunnel`; a browser's warning page; a 307 to the login without a
 *   valid token;
 * - the socket.io events channel (`sandbox.state.updated`).
 *
 * Each sandbox is a real container of the computer image with Docker's
 * default /dev/shm, as the runner makes it. Every request is checked
 * against daytona-definition.ts (`recorder`, `violations`). Faults:
 * `inject`, `startDelayMs`, `startAnswerWaitMs`, `dropNextLogStream`.
 */
export class DaytonaEmulator {
  readonly id: string;
  private readonly host: SandboxHost;
  private readonly apiKey: string;
  private readonly sandboxes = new Map<string, Sandbox>();
  /** Signed tokens by `port:token` (sandbox.service.ts getSignedPortPreviewUrl keeps them so). */
  private readonly previews = new Map<string, PreviewGrant>();
  private readonly faults = new FaultRules();
  private readonly servers = new LoopbackServers();
  private readonly api: LoopbackServer;
  private readonly preview: LoopbackServer;
  private readonly tunnels: PreviewTunnels;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly lifecycle: SandboxLifecycle;
  /** The events channel; its clients passed the socket.io CONNECT with the API key. */
  private readonly events: SocketIoChannel;
  private dropLogStreams = 0;
  /** Every exchange, checked against daytona-definition.ts; the suites assert it holds no violation. */
  readonly recorder = new ServiceRecorder("Daytona", DAYTONA_OPERATIONS);
  /** Every request the emulator answered, as `METHOD path` (tests read what the SDK sent). */
  readonly requests: string[] = [];
  /** The body of every create it was sent, as sent (tests read what the SDK asked for). */
  readonly createBodies: Record<string, unknown>[] = [];
  /** Every call it answered with an error, as `STATUS METHOD path` (injected faults included). */
  readonly refusals: string[] = [];
  startDelayMs: number;
  startAnswerWaitMs: number;
  readonly workspaceUser: string;

  constructor(private readonly options: DaytonaEmulatorOptions) {
    const containers = new ComputerContainers(options.docker, EMULATOR_LABEL);
    this.id = containers.instance;
    this.apiKey = options.apiKey;
    this.startDelayMs = options.startDelayMs ?? 0;
    this.startAnswerWaitMs = options.startAnswerWaitMs ?? 0;
    this.workspaceUser = options.user ?? "1000:1000";
    const hosts = options.publicHosts ?? {};
    this.host = {
      containers,
      user: this.workspaceUser,
      network: options.network,
      open: this.servers.sockets,
      extraHosts: Object.entries(hosts).map(([name, address]) => `${name}:${address}`),
      fence: (containerId, rules) =>
        startFence(options.docker, containerId, rules, { publicStandIns: [], hosts }, { [EMULATOR_LABEL]: this.id }),
    };
    this.events = new SocketIoChannel((auth) => auth.token === this.apiKey);
    this.lifecycle = new SandboxLifecycle({
      changed: (sandbox, oldState) =>
        this.events.emit("sandbox.state.updated", { sandbox: this.dto(sandbox), oldState, newState: sandbox.state }),
      slowStart: () => this.slowStart(),
    });
    this.api = this.servers.serve(
      (req, res) => void this.handleApi(req, res),
      (req, socket, head) => void this.handleApiUpgrade(req, socket, head),
    );
    const proxy = new PreviewProxy({
      grant: (port, token) => this.previews.get(`${port}:${token}`),
      isPublic: (id) => this.sandboxes.get(id)?.public === true,
      address: (id) => {
        const sandbox = this.sandboxes.get(id);
        return sandbox?.state === "started" ? sandbox.ip : undefined;
      },
      open: this.servers.sockets,
    });
    this.preview = this.servers.serve(
      (req, res) => proxy.http(req, res),
      (req, socket, head) => proxy.upgrade(req, socket, head),
    );
    this.tunnels = new PreviewTunnels(() => this.preview.port);
  }

  /** The `apiUrl` to give the provider (and the SDK). */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.api.port}/api`;
  }

  /** Every way a request or answer left Daytona's definition so far. */
  get violations(): readonly Violation[] {
    return this.recorder.violations;
  }

  /**
   * A loopback URL that reaches a host-form preview URL through the
   * emulator's proxy, its host sent as the Host header (preview-tunnel.ts):
   * give it to the provider as `previewUrl: (p) => emulator.previewTunnel(p.url)`.
   */
  previewTunnel(url: string): Promise<string> {
    return this.tunnels.open(url);
  }

  /** The preview host a tunnel URL stands for. */
  previewHostOf(tunnelUrl: string): string | undefined {
    return this.tunnels.hostOf(tunnelUrl);
  }

  async start(): Promise<void> {
    await this.servers.listen();
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    for (const sandbox of this.sandboxes.values()) sandbox.abandonSessions();
    // A sandbox's archive first: an earlier archive, its parent, can go only after it.
    for (const { archiveImage } of this.sandboxes.values())
      if (archiveImage) await this.host.containers.removeImage(archiveImage);
    await this.host.containers.removeAll();
    for (const client of this.wss.clients) client.terminate();
    await this.tunnels.close();
    await this.servers.close();
  }

  /** Answers the next `times` calls that match with `status` (REST and toolbox alike). */
  inject(rule: FaultRule): void {
    this.faults.inject(rule);
  }

  /** Injected faults not yet answered (a test checks its faults were met). */
  get pendingFaults(): number {
    return this.faults.pending;
  }

  /** The next `count` log websockets close after their first frame, while the command still runs. */
  dropNextLogStream(count = 1): void {
    this.dropLogStreams += count;
  }

  /** The sandbox's state as the API reports it, or undefined when it has none. */
  stateOf(id: string): EmulatedSandboxState | undefined {
    return this.sandboxes.get(id)?.state;
  }

  /** Every state the sandbox entered, in order. */
  statesOf(id: string): readonly EmulatedSandboxState[] {
    return this.sandboxes.get(id)?.history ?? [];
  }

  /** What the API keeps of a sandbox: as created (labels, env, auto-stop, public) and its last activity. */
  sandboxInfo(id: string):
    | {
        labels: Record<string, string>;
        env: Record<string, string>;
        autoStopInterval: number;
        public: boolean;
        lastActivityAt: string;
      }
    | undefined {
    const s = this.sandboxes.get(id);
    if (!s) return undefined;
    return {
      labels: s.labels,
      env: s.env,
      autoStopInterval: s.autoStopInterval,
      public: s.public,
      lastActivityAt: s.lastActivityAt,
    };
  }

  /** Clients connected to the events channel with the API key now. */
  get eventSubscribers(): number {
    return this.events.size;
  }

  /** The container behind a sandbox now (none while it is archived). */
  containerOf(id: string): string | undefined {
    return this.sandboxes.get(id)?.containerId;
  }

  /** Deletes a sandbox behind the provider's back, as a person in Daytona's dashboard would. */
  async deleteBehindTheProvider(id: string): Promise<void> {
    await this.destroy(this.require(id));
  }

  /** Stops a sandbox behind the provider's back (Daytona's own auto-stop, say). */
  async stopBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    await this.lifecycle.transition(sandbox, "stopping", () => sandbox.stopContainer(), "stopped");
  }

  /** Archives a sandbox behind the provider's back (auto-archive). */
  async archiveBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    if (sandbox.state === "started") await this.stopBehindTheProvider(id);
    await this.lifecycle.transition(sandbox, "archiving", () => sandbox.archiveContainer(), "archived");
  }

  /**
   * Pauses a sandbox behind the provider's back (auto-pause): pausing, then
   * paused, its container frozen. The sandbox is reported as the VM class
   * from then on, the only one the API pauses and resumes (sandbox.service.ts
   * pause and start: 422 for a container).
   */
  async pauseBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    sandbox.sandboxClass = "linux-vm";
    await this.lifecycle.transition(sandbox, "pausing", () => sandbox.pauseContainer(), "paused");
  }

  /**
   * Holds a started sandbox in `state` ("snapshotting" or "forking", which a
   * snapshot or a fork of it passes through: sandbox.service.ts createSnapshot,
   * fork) for `ms`, then back to started. Its toolbox answers 502 meanwhile.
   */
  async holdBehindTheProvider(id: string, state: "snapshotting" | "forking", ms: number): Promise<void> {
    const sandbox = this.require(id);
    if (sandbox.state !== "started") throw new Error(`sandbox ${id} is ${sandbox.state}, not started`);
    await this.lifecycle.transition(sandbox, state, () => new Promise((r) => setTimeout(r, ms)), "started");
  }

  // ---- REST and toolbox -------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${url.pathname}`);
    const bulk = method === "POST" ? /^\/toolbox\/([^/]+)\/files\/bulk-(upload|download)$/.exec(url.pathname) : null;
    let body: unknown;
    // The upload streams through as it arrives: its multipart body is not read here.
    if (bulk?.[2] !== "upload") body = await bodyOf(req).catch(() => undefined);
    const exchange = this.recorder.request(method, url.pathname, {
      query: url.searchParams,
      body,
      headers: req.headers,
    });
    const isApi = url.pathname.startsWith("/api/");
    try {
      if (req.headers.authorization !== `Bearer ${this.apiKey}`) throw new HttpAnswer(401, "Invalid credentials");
      const fault = this.faults.take(method, url.pathname);
      const injected = (f: FaultRule) => new InjectedAnswer(f.status, f.message ?? `injected ${f.status}`);
      if (fault && !fault.after) throw injected(fault);
      // Bulk transfers answer themselves (a fault `after` one is not answered).
      if (bulk?.[2] === "upload") {
        await this.runningSandbox(decodeURIComponent(bulk[1] as string)).upload(req);
        exchange.answer(200);
        sendJson(res, 200, {});
        return;
      }
      if (bulk?.[2] === "download") {
        await this.runningSandbox(decodeURIComponent(bulk[1] as string)).download(body as { paths?: string[] }, res);
        exchange.answer(200);
        return;
      }
      const [, root, id, ...rest] = url.pathname.split("/").map(decodeURIComponent);
      let answer: { status: number; body?: unknown };
      if (root === "api") answer = await this.rest(method, url, body);
      else if (root === "toolbox")
        answer = await this.runningSandbox(id as string).toolbox(method, rest.join("/"), body);
      else throw new HttpAnswer(404, `no route ${url.pathname}`);
      if (fault) throw injected(fault);
      exchange.answer(answer.status, answer.body);
      if (answer.body === undefined) res.writeHead(answer.status).end();
      else sendJson(res, answer.status, answer.body);
    } catch (error) {
      const status = error instanceof HttpAnswer ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      this.refusals.push(`${status} ${method} ${url.pathname}`);
      const answer = isApi
        ? apiErrorBody(status, message, req.url ?? "/")
        : daemonErrorBody(status, message, url, method);
      // A fault a test injected is its own answer, not the emulator's: only the request was held to the definition.
      if (!(error instanceof InjectedAnswer)) exchange.answer(status, answer);
      if (res.headersSent) res.end(JSON.stringify(answer));
      else sendJson(res, status, answer);
    }
  }

  private async rest(method: string, url: URL, body: unknown): Promise<{ status: number; body?: unknown }> {
    const [root, id, verb, arg, sub] = url.pathname.slice("/api/".length).split("/").map(decodeURIComponent);
    if (root !== "sandbox") throw new HttpAnswer(404, `no route ${url.pathname}`);
    const ok = (answer?: unknown) => ({ status: 200, body: answer });
    if (id === undefined && method === "POST") return ok(this.create(body as Record<string, unknown>));
    if (id === undefined && method === "GET") return ok(this.list(url));
    const sandbox = this.find(id as string);
    if (verb === undefined && method === "GET") return ok(this.dto(sandbox));
    if (verb === undefined && method === "DELETE") {
      this.lifecycle.checkDestroy(sandbox);
      void this.destroy(sandbox);
      return ok(this.dto(sandbox));
    }
    if (verb === "start" && method === "POST") return ok(await this.startSandbox(sandbox));
    if (verb === "stop" && method === "POST") {
      this.lifecycle.checkStop(sandbox);
      void this.lifecycle.transition(sandbox, "stopping", () => sandbox.stopContainer(), "stopped");
      return ok(this.dto(sandbox));
    }
    if (verb === "archive" && method === "POST") {
      this.lifecycle.checkArchive(sandbox);
      void this.lifecycle.transition(sandbox, "archiving", () => sandbox.archiveContainer(), "archived");
      return ok(this.dto(sandbox));
    }
    if (verb === "pause" && method === "POST") {
      this.lifecycle.checkPause(sandbox);
      void this.lifecycle.transition(sandbox, "pausing", () => sandbox.pauseContainer(), "paused");
      return ok(this.dto(sandbox));
    }
    if (verb === "last-activity" && method === "POST") {
      sandbox.lastActivityAt = new Date().toISOString();
      return { status: 201 };
    }
    if (verb === "autostop" && method === "POST") {
      sandbox.autoStopInterval = Number(arg);
      return ok(this.dto(sandbox));
    }
    if (verb === "toolbox-proxy-url" && method === "GET") return ok({ url: this.toolboxProxyUrl() });
    if (verb === "ports" && sub === "signed-preview-url" && method === "GET") return ok(this.signPreview(sandbox, url));
    throw new HttpAnswer(404, `no route ${method} ${url.pathname}`);
  }

  /**
   * A signed preview URL (sandbox.service.ts getSignedPortPreviewUrl,
   * :1925-1985): port 1-65535 and 1 s to 24 h or 400; a 16-character
   * lower-case token kept for that port with that TTL; the URL
   * `<protocol>://<port>-<token>.<proxy domain>`.
   */
  private signPreview(sandbox: Sandbox, url: URL): unknown {
    const port = Number(url.pathname.split("/")[5]);
    const seconds = Number(url.searchParams.get("expiresInSeconds") ?? 60);
    if (!(port >= 1 && port <= 65535)) throw new HttpAnswer(400, "Invalid port");
    if (!(seconds >= 1 && seconds <= 86_400))
      throw new HttpAnswer(400, "expiresInSeconds must be between 1 second and 24 hours");
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    const token = [...randomBytes(16)].map((b) => alphabet[b % alphabet.length]).join("");
    this.previews.set(`${port}:${token}`, { sandboxId: sandbox.id, port, expiresAt: Date.now() + seconds * 1000 });
    return { sandboxId: sandbox.id, port, token, url: `https://${port}-${token}.${PREVIEW_DOMAIN}` };
  }

  private toolboxProxyUrl(): string {
    return `http://127.0.0.1:${this.api.port}/toolbox`;
  }

  private create(body: Record<string, unknown>): unknown {
    this.createBodies.push(body);
    // Checked before the sandbox exists (sandbox.service.ts l.651-661), as the image is.
    const network = networkSettingsOf(body);
    const sandbox = new Sandbox(this.host, imageOf(body, this.options.snapshots), body, network);
    this.sandboxes.set(sandbox.id, sandbox);
    const work = async () => {
      await sandbox.createContainer(sandbox.image);
      await this.slowStart();
    };
    void this.lifecycle.transition(sandbox, "creating", work, "started");
    return this.dto(sandbox);
  }

  private async startSandbox(sandbox: Sandbox): Promise<unknown> {
    if (this.lifecycle.checkStart(sandbox) === "started") return this.dto(sandbox);
    const started = this.lifecycle.start(sandbox);
    if (this.startAnswerWaitMs > 0) {
      const inTime = await Promise.race([
        started.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), this.startAnswerWaitMs)),
      ]);
      if (!inTime) throw new HttpAnswer(504, "Timed out waiting for the sandbox to start");
    }
    return this.dto(sandbox);
  }

  private list(url: URL): unknown {
    const wanted = JSON.parse(url.searchParams.get("labels") ?? "{}") as Record<string, string>;
    const items = [...this.sandboxes.values()]
      .filter((s) => s.state !== "destroyed")
      .filter((s) => Object.entries(wanted).every(([k, v]) => s.labels[k] === v))
      .map((s) => this.dto(s));
    return { items, nextCursor: null };
  }

  /** A sandbox as the API answers it (Daytona's `Sandbox`). */
  private dto(s: Sandbox): Record<string, unknown> {
    return {
      id: s.id,
      organizationId: "emulated-organization",
      name: s.name,
      snapshot: s.image,
      user: "computer",
      env: s.env,
      labels: s.labels,
      public: s.public,
      ...s.network,
      target: "local",
      cpu: 2,
      gpu: 0,
      memory: 4,
      disk: 10,
      state: s.state,
      desiredState: this.lifecycle.desiredStateOf(s),
      errorReason: s.errorReason,
      backupState: "None",
      autoStopInterval: s.autoStopInterval,
      autoArchiveInterval: 10080,
      autoDeleteInterval: -1,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      lastActivityAt: s.lastActivityAt,
      sandboxClass: s.sandboxClass,
      toolboxProxyUrl: this.toolboxProxyUrl(),
      daemonVersion: "emulated",
    };
  }

  private find(id: string): Sandbox {
    const sandbox = this.sandboxes.get(id) ?? [...this.sandboxes.values()].find((s) => s.name === id);
    if (!sandbox || sandbox.state === "destroyed") throw new HttpAnswer(404, `Sandbox with ID or name ${id} not found`);
    return sandbox;
  }

  private require(id: string): Sandbox {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new Error(`no sandbox ${id} in this emulator`);
    return sandbox;
  }

  /** Toolbox calls: answered only while the sandbox runs, as Daytona's proxy does. */
  private runningSandbox(id: string): Sandbox {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox || sandbox.state === "destroyed") throw new HttpAnswer(404, "sandbox not found");
    // An archived sandbox's toolbox answers 404 (Daytona #4632); one changing state, 502 (#4142).
    if (sandbox.state === "archived") throw new HttpAnswer(404, "sandbox not found");
    if (sandbox.state === "stopped") throw new HttpAnswer(400, "sandbox is not running");
    if (sandbox.state !== "started") throw new HttpAnswer(502, "bad gateway");
    return sandbox;
  }

  private async slowStart(): Promise<void> {
    if (this.startDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.startDelayMs));
  }

  private async destroy(sandbox: Sandbox): Promise<void> {
    if (sandbox.state === "destroyed" || sandbox.state === "destroying") return;
    await this.lifecycle.transition(sandbox, "destroying", () => sandbox.remove(), "destroyed");
  }

  // ---- websockets: the events channel and a command's log ---------------------

  private async handleApiUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    this.requests.push(`WS ${url.pathname}`);
    if (url.pathname === "/api/socket.io/" && url.searchParams.get("transport") === "websocket") {
      // Authenticated inside the protocol (CONNECT's auth.token), as Daytona's is.
      this.wss.handleUpgrade(req, socket, head, (ws) => this.events.accept(ws));
      return;
    }
    const exchange = this.recorder.request("GET", url.pathname, { query: url.searchParams });
    const target = this.logStreamOf(req, url);
    if (target instanceof HttpAnswer) {
      if (!(target instanceof InjectedAnswer)) exchange.answer(target.status, null);
      refuseUpgrade(socket, target.status, target.message);
      return;
    }
    exchange.answer(101);
    const { session, command } = target;
    const drop = this.dropLogStreams > 0;
    if (drop) this.dropLogStreams--;
    this.wss.handleUpgrade(req, socket, head, async (ws) => {
      // log.go GetSessionCommandLogs + log_reader.go: each read a binary message; a normal close at the end.
      const reader = await session
        .follow(
          command,
          url.searchParams.get("follow") === "true",
          (bytes) => {
            for (let at = 0; at < bytes.length; at += 1024) ws.send(bytes.subarray(at, at + 1024));
            // Mid-command: the connection goes without a close frame, as a broken proxy's does.
            if (drop) setTimeout(() => ws.terminate(), 300);
          },
          () => ws.close(1000),
        )
        .catch(() => undefined);
      if (!reader) ws.close(1011);
      else ws.once("close", () => reader.stop());
    });
  }

  /** The command whose log a websocket asks for, or how its upgrade is refused. */
  private logStreamOf(req: IncomingMessage, url: URL) {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return new HttpAnswer(401, "Unauthorized");
    const fault = this.faults.take("WS", url.pathname);
    if (fault) {
      this.refusals.push(`${fault.status} WS ${url.pathname}`);
      return new InjectedAnswer(fault.status, "Injected");
    }
    const match = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/.exec(url.pathname);
    if (!match) return new HttpAnswer(404, "Not Found");
    try {
      const [sandboxId, sessionId, commandId] = match.slice(1).map(decodeURIComponent) as [string, string, string];
      const session = this.runningSandbox(sandboxId).session(sessionId);
      return { session, command: session.command(commandId) };
    } catch (error) {
      return error instanceof HttpAnswer ? error : new HttpAnswer(500, "Refused");
    }
  }
}

/** An answer a test injected (`inject`). */
class InjectedAnswer extends HttpAnswer {}

/** The API's error body (apps/api/src/filters/all-exceptions.filter.ts:81-87). */
function apiErrorBody(status: number, message: string, path: string) {
  return {
    path,
    timestamp: new Date().toISOString(),
    statusCode: status,
    error: STATUS_CODES[status] ?? "Error",
    message,
  };
}

/** The daemon's error body (libs/common-go/pkg/errors/http.go ErrorResponse). */
function daemonErrorBody(status: number, message: string, url: URL, method: string) {
  return { statusCode: status, message, timestamp: new Date().toISOString(), path: url.pathname, method };
}

/** The image a create asks for: a snapshot (mapped, or itself an image) or a build's `FROM`. */
function imageOf(body: Record<string, unknown>, snapshots: Record<string, string> | undefined): string {
  if (typeof body.snapshot === "string" && body.snapshot) return snapshots?.[body.snapshot] ?? body.snapshot;
  const dockerfile = (body.buildInfo as { dockerfileContent?: string } | undefined)?.dockerfileContent;
  const from = dockerfile ? /^\s*FROM\s+(\S+)/im.exec(dockerfile)?.[1] : undefined;
  if (!from) throw new HttpAnswer(400, "a snapshot or an image is required");
  return from;
}

/** A JSON body parsed, any other as text; none is undefined. */
async function bodyOf(req: IncomingMessage): Promise<unknown> {
  if (/json/.test(req.headers["content-type"] ?? "")) return readJson(req);
  return (await readBody(req)).toString("utf8") || undefined;
}
