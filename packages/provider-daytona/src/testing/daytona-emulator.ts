import { randomBytes, randomUUID } from "node:crypto";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { type WebSocket, WebSocketServer } from "ws";
import type { DaytonaEmulatorOptions } from "./daytona-emulator-options.js";
import type { EmulatedSandboxState } from "./emulated-sandbox-state.js";
import type { FaultRule } from "./fault-rule.js";
import { readMultipart } from "./multipart-upload.js";

/** Every container an emulator starts carries this label (its value: the emulator's id). */
export const EMULATOR_LABEL = "agent-computer.test/daytona-emulator";

const STDOUT_PREFIX = Buffer.from([1, 1, 1]);
const STDERR_PREFIX = Buffer.from([2, 2, 2]);

interface SessionCommandRecord {
  id: string;
  command: string;
  exitCode: number | undefined;
  log: Buffer[];
  stdout: Buffer[];
  stderr: Buffer[];
  followers: Set<WebSocket>;
  stdin: Duplex | undefined;
  done: Promise<void>;
}

interface SandboxRecord {
  id: string;
  name: string;
  labels: Record<string, string>;
  env: Record<string, string>;
  image: string;
  state: EmulatedSandboxState;
  containerId: string | undefined;
  archiveImage: string | undefined;
  createdAt: string;
  updatedAt: string;
  lastActivityAt: string;
  autoStopInterval: number;
  public: boolean;
  errorReason: string | undefined;
  sessions: Map<string, Map<string, SessionCommandRecord>>;
  /** The one transition under way: later ones wait for it. */
  transition: Promise<void>;
}

interface PreviewGrant {
  sandboxId: string;
  port: number;
  expiresAt: number;
}

class HttpAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A loopback Daytona for tests (docs/architecture.md §12): a real HTTP
 * server speaking exactly the calls `@daytonaio/sdk` 0.218 makes for the
 * provider: the REST API with the sandbox state machine (create, get,
 * list by labels, start, stop, archive, delete, signed preview URLs,
 * activity), the toolbox under the proxy URL it returns (sessions, async
 * session exec, the command's logs as JSON or over a websocket with the
 * SDK's 01 01 01 / 02 02 02 stream markers, input), and the preview proxy
 * that reaches a sandbox's port with plain HTTP and websocket upgrades, and
 * the socket.io events channel (`sandbox.state.updated`) the SDK listens
 * on by default; its polling mode works too.
 *
 * Each sandbox is a real container of the computer image on the given
 * Docker engine; archive commits the container to an image and removes
 * it, and a start from archive recreates it from that image. Faults:
 * `inject` answers matching calls with a status (5xx, the transient
 * 404/502 of Daytona #4632/#4142), `startDelayMs` makes starts slow,
 * `startAnswerWaitMs` makes a start call wait and then answer 504 the way
 * a proxy in front of the server's own 30 s wait does, and
 * `dropNextLogStream` cuts a command's log websocket mid-command.
 */
export class DaytonaEmulator {
  readonly id = randomBytes(4).toString("hex");
  private readonly docker: Docker;
  private readonly apiKey: string;
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly previews = new Map<string, PreviewGrant>();
  private readonly faults: FaultRule[] = [];
  private readonly api: Server;
  private readonly preview: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<Socket | Duplex>();
  private apiPort = 0;
  private previewPort = 0;
  private dropLogStreams = 0;
  /** Event channel clients that passed the socket.io handshake with the API key. */
  private readonly eventClients = new Set<WebSocket>();
  /** Every request the emulator answered, as `METHOD path` (tests read what the SDK sent). */
  readonly requests: string[] = [];
  /** Every call it answered with an error, as `STATUS METHOD path` (injected faults included). */
  readonly refusals: string[] = [];
  startDelayMs: number;
  startAnswerWaitMs: number;
  readonly workspaceUser: string;

  constructor(private readonly options: DaytonaEmulatorOptions) {
    this.docker = options.docker;
    this.apiKey = options.apiKey;
    this.startDelayMs = options.startDelayMs ?? 0;
    this.startAnswerWaitMs = options.startAnswerWaitMs ?? 0;
    this.workspaceUser = options.user ?? "1000:1000";
    this.api = createServer((req, res) => void this.handleApi(req, res));
    this.api.on("upgrade", (req, socket, head) => this.handleApiUpgrade(req, socket, head));
    this.preview = createServer((req, res) => void this.handlePreview(req, res));
    this.preview.on("upgrade", (req, socket, head) => void this.handlePreviewUpgrade(req, socket, head));
    for (const server of [this.api, this.preview]) {
      server.on("connection", (socket) => {
        this.sockets.add(socket);
        socket.once("close", () => this.sockets.delete(socket));
      });
    }
  }

  /** The `apiUrl` to give the provider (and the SDK). */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.apiPort}/api`;
  }

  async start(): Promise<void> {
    for (const [server, set] of [
      [this.api, (p: number) => (this.apiPort = p)],
      [this.preview, (p: number) => (this.previewPort = p)],
    ] as const) {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const address = server.address();
      set(typeof address === "object" && address ? address.port : 0);
    }
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: [`${EMULATOR_LABEL}=${this.id}`] },
    });
    await Promise.all(
      containers.map((c) =>
        this.docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
    for (const sandbox of this.sandboxes.values()) {
      if (sandbox.archiveImage)
        await this.docker
          .getImage(sandbox.archiveImage)
          .remove({ force: true })
          .catch(() => {});
    }
    const images = await this.docker.listImages({ filters: { label: [`${EMULATOR_LABEL}=${this.id}`] } });
    await Promise.all(
      images.map((i) =>
        this.docker
          .getImage(i.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
    for (const socket of this.sockets) socket.destroy();
    for (const client of this.wss.clients) client.terminate();
    await Promise.all([this.api, this.preview].map((s) => new Promise((resolve) => s.close(resolve))));
  }

  /** Answers the next `times` calls that match with `status` (REST and toolbox alike). */
  inject(rule: FaultRule): void {
    this.faults.push({ ...rule, times: rule.times ?? 1 });
  }

  /** Injected faults not yet answered (a test checks its faults were met). */
  get pendingFaults(): number {
    return this.faults.reduce((sum, f) => sum + (f.times ?? 1), 0);
  }

  /** The next `count` log websockets close after their first frame, while the command still runs. */
  dropNextLogStream(count = 1): void {
    this.dropLogStreams += count;
  }

  /** The sandbox's state as the API reports it, or undefined when it has none. */
  stateOf(id: string): EmulatedSandboxState | undefined {
    return this.sandboxes.get(id)?.state;
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
    return (
      s && {
        labels: s.labels,
        env: s.env,
        autoStopInterval: s.autoStopInterval,
        public: s.public,
        lastActivityAt: s.lastActivityAt,
      }
    );
  }

  /** Clients connected to the events channel with the API key now. */
  get eventSubscribers(): number {
    return this.eventClients.size;
  }

  /** The container behind a sandbox now (none while it is archived). */
  containerOf(id: string): string | undefined {
    return this.sandboxes.get(id)?.containerId;
  }

  /** Deletes a sandbox behind the provider's back, as a person in Daytona's dashboard would. */
  async deleteBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    await this.destroy(sandbox);
  }

  /** Stops a sandbox behind the provider's back (Daytona's own auto-stop, say). */
  async stopBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    await this.transition(sandbox, "stopping", () => this.stopContainer(sandbox), "stopped");
  }

  /** Archives a sandbox behind the provider's back (auto-archive). */
  async archiveBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    if (sandbox.state === "started") await this.stopBehindTheProvider(id);
    await this.transition(sandbox, "archiving", () => this.archiveContainer(sandbox), "archived");
  }

  // ---- REST and toolbox -------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${url.pathname}`);
    try {
      if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
        throw new HttpAnswer(401, "Invalid credentials");
      }
      const fault = this.takeFault(method, url.pathname);
      if (fault && !fault.after) throw new HttpAnswer(fault.status, fault.message ?? `injected ${fault.status}`);
      if (method === "POST" && /^\/toolbox\/[^/]+\/files\/bulk-upload$/.test(url.pathname)) {
        await this.upload(url, req);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        return;
      }
      if (method === "POST" && /^\/toolbox\/[^/]+\/files\/bulk-download$/.test(url.pathname)) {
        await this.download(url, (await readBody(req)) as { paths?: string[] }, res);
        return;
      }
      const body = await readBody(req);
      const answer = url.pathname.startsWith("/api/")
        ? await this.rest(method, url, body)
        : url.pathname.startsWith("/toolbox/")
          ? await this.toolbox(method, url, body)
          : (() => {
              throw new HttpAnswer(404, `no route ${url.pathname}`);
            })();
      if (fault) throw new HttpAnswer(fault.status, fault.message ?? `injected ${fault.status}`);
      if (answer === undefined) {
        res.writeHead(204).end();
        return;
      }
      const text = JSON.stringify(answer);
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
    } catch (error) {
      const status = error instanceof HttpAnswer ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      this.refusals.push(`${status} ${method} ${url.pathname}`);
      const text = JSON.stringify({ statusCode: status, message, error: "emulated" });
      if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
      res.end(text);
    }
  }

  private takeFault(method: string, path: string): FaultRule | undefined {
    const index = this.faults.findIndex(
      (f) => (f.method === undefined || f.method === method) && f.path.test(path) && (f.times ?? 1) > 0,
    );
    if (index < 0) return undefined;
    const fault = this.faults[index] as FaultRule;
    fault.times = (fault.times ?? 1) - 1;
    if (fault.times <= 0) this.faults.splice(index, 1);
    return fault;
  }

  private async rest(method: string, url: URL, body: unknown): Promise<unknown> {
    const parts = url.pathname.slice("/api/".length).split("/").map(decodeURIComponent);
    if (parts[0] !== "sandbox") throw new HttpAnswer(404, `no route ${url.pathname}`);
    if (parts.length === 1 && method === "POST") return this.create(body as Record<string, unknown>);
    if (parts.length === 1 && method === "GET") return this.list(url);
    const sandbox = this.find(parts[1] as string);
    const verb = parts[2];
    if (parts.length === 2 && method === "GET") return this.dto(sandbox);
    if (parts.length === 2 && method === "DELETE") {
      void this.destroy(sandbox);
      return this.dto(sandbox);
    }
    if (verb === "start" && method === "POST") return this.startSandbox(sandbox);
    if (verb === "stop" && method === "POST") {
      if (sandbox.state === "stopped") return this.dto(sandbox);
      if (sandbox.state !== "started")
        throw new HttpAnswer(400, `Sandbox is ${sandbox.state}; it cannot be stopped now`);
      void this.transition(sandbox, "stopping", () => this.stopContainer(sandbox), "stopped");
      return this.dto(sandbox);
    }
    if (verb === "archive" && method === "POST") {
      if (sandbox.state !== "stopped") throw new HttpAnswer(400, "Sandbox must be stopped before it is archived");
      void this.transition(sandbox, "archiving", () => this.archiveContainer(sandbox), "archived");
      return this.dto(sandbox);
    }
    if (verb === "last-activity" && method === "POST") {
      sandbox.lastActivityAt = new Date().toISOString();
      return undefined;
    }
    if (verb === "autostop" && method === "POST") {
      sandbox.autoStopInterval = Number(parts[3]);
      return undefined;
    }
    if (verb === "toolbox-proxy-url" && method === "GET") return { url: this.toolboxProxyUrl() };
    if (verb === "ports" && parts[4] === "signed-preview-url" && method === "GET") {
      const port = Number(parts[3]);
      const expires = Number(url.searchParams.get("expiresInSeconds") ?? 60);
      const token = randomBytes(16).toString("hex");
      this.previews.set(token, { sandboxId: sandbox.id, port, expiresAt: Date.now() + expires * 1000 });
      return {
        sandboxId: sandbox.id,
        port,
        token,
        url: `http://127.0.0.1:${this.previewPort}/?${PREVIEW_TOKEN_PARAM}=${token}`,
      };
    }
    throw new HttpAnswer(404, `no route ${method} ${url.pathname}`);
  }

  private toolboxProxyUrl(): string {
    return `http://127.0.0.1:${this.apiPort}/toolbox`;
  }

  private async create(body: Record<string, unknown>): Promise<unknown> {
    const image = imageOf(body, this.options.snapshots);
    const now = new Date().toISOString();
    const sandbox: SandboxRecord = {
      id: randomUUID(),
      name: typeof body.name === "string" ? body.name : `sandbox-${randomBytes(3).toString("hex")}`,
      labels: (body.labels as Record<string, string>) ?? {},
      env: (body.env as Record<string, string>) ?? {},
      image,
      state: "creating",
      containerId: undefined,
      archiveImage: undefined,
      createdAt: now,
      updatedAt: now,
      lastActivityAt: now,
      autoStopInterval: typeof body.autoStopInterval === "number" ? body.autoStopInterval : 15,
      public: body.public === true,
      errorReason: undefined,
      sessions: new Map(),
      transition: Promise.resolve(),
    };
    this.sandboxes.set(sandbox.id, sandbox);
    void this.transition(
      sandbox,
      "creating",
      async () => {
        await this.createContainer(sandbox, image);
        await this.slowStart();
      },
      "started",
    );
    return this.dto(sandbox);
  }

  private async startSandbox(sandbox: SandboxRecord): Promise<unknown> {
    if (sandbox.state === "started") return this.dto(sandbox);
    if (sandbox.state !== "stopped" && sandbox.state !== "archived") {
      throw new HttpAnswer(400, `Sandbox is ${sandbox.state}; it cannot be started now`);
    }
    const fromArchive = sandbox.state === "archived";
    const started = this.transition(
      sandbox,
      fromArchive ? "restoring" : "starting",
      async () => {
        if (fromArchive) await this.createContainer(sandbox, sandbox.archiveImage as string);
        else await this.docker.getContainer(sandbox.containerId as string).start();
        await this.slowStart();
      },
      "started",
    );
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
      .filter((s) => Object.entries(wanted).every(([k, v]) => s.labels[k] === v))
      .map((s) => this.dto(s));
    return { items, total: items.length, page: 1, totalPages: 1, nextCursor: null };
  }

  private dto(sandbox: SandboxRecord): Record<string, unknown> {
    return {
      id: sandbox.id,
      organizationId: "emulated-organization",
      name: sandbox.name,
      snapshot: sandbox.image,
      user: "computer",
      env: sandbox.env,
      labels: sandbox.labels,
      public: sandbox.public,
      networkBlockAll: false,
      target: "local",
      cpu: 2,
      gpu: 0,
      memory: 4,
      disk: 10,
      state: sandbox.state,
      desiredState: sandbox.state === "stopped" || sandbox.state === "archived" ? sandbox.state : "started",
      errorReason: sandbox.errorReason,
      backupState: "None",
      autoStopInterval: sandbox.autoStopInterval,
      autoArchiveInterval: 10080,
      autoDeleteInterval: -1,
      createdAt: sandbox.createdAt,
      updatedAt: sandbox.updatedAt,
      lastActivityAt: sandbox.lastActivityAt,
      toolboxProxyUrl: this.toolboxProxyUrl(),
      daemonVersion: "emulated",
    };
  }

  private find(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id) ?? [...this.sandboxes.values()].find((s) => s.name === id);
    if (!sandbox || sandbox.state === "destroyed") throw new HttpAnswer(404, `Sandbox with ID or name ${id} not found`);
    return sandbox;
  }

  private require(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new Error(`no sandbox ${id} in this emulator`);
    return sandbox;
  }

  /** Runs one state change after the one under way: `during` while it works, `after` once done (or "error"). */
  private transition(
    sandbox: SandboxRecord,
    during: EmulatedSandboxState,
    work: () => Promise<void>,
    after: EmulatedSandboxState,
  ): Promise<void> {
    const run = sandbox.transition.then(async () => {
      if (sandbox.state === "destroyed") return;
      this.setState(sandbox, during);
      try {
        await work();
        if (sandbox.state === during) this.setState(sandbox, after);
      } catch (error) {
        sandbox.errorReason = (error as Error).message.slice(0, 300);
        if (sandbox.state === during) this.setState(sandbox, "error");
      }
    });
    sandbox.transition = run.catch(() => {});
    return run;
  }

  private setState(sandbox: SandboxRecord, state: EmulatedSandboxState): void {
    const oldState = sandbox.state;
    sandbox.state = state;
    sandbox.updatedAt = new Date().toISOString();
    // socket.io EVENT packet on engine.io MESSAGE: 4 2 [name, payload].
    const packet = `42${JSON.stringify(["sandbox.state.updated", { sandbox: this.dto(sandbox), oldState, newState: state }])}`;
    for (const client of this.eventClients) client.send(packet);
  }

  /**
   * The SDK's events channel: socket.io v5 over engine.io v4, websocket
   * transport only (what the SDK asks for). The handshake, CONNECT with
   * the API key as `auth.token`, pings, and `sandbox.state.updated` on
   * every state change.
   */
  private serveEvents(ws: WebSocket): void {
    ws.send(
      `0${JSON.stringify({ sid: randomBytes(8).toString("hex"), upgrades: [], pingInterval: 25_000, pingTimeout: 60_000, maxPayload: 1_000_000 })}`,
    );
    const ping = setInterval(() => ws.send("2"), 25_000);
    ping.unref();
    ws.on("message", (data) => {
      const text = data.toString();
      if (text.startsWith("40")) {
        const auth = text.length > 2 ? (JSON.parse(text.slice(2)) as { token?: string }) : {};
        if (auth.token !== this.apiKey) {
          ws.send(`44${JSON.stringify({ message: "Unauthorized" })}`);
          return;
        }
        this.eventClients.add(ws);
        ws.send(`40${JSON.stringify({ sid: randomBytes(8).toString("hex") })}`);
      }
      // "3" (pong) and anything else: nothing to do.
    });
    ws.once("close", () => {
      clearInterval(ping);
      this.eventClients.delete(ws);
    });
  }

  private async slowStart(): Promise<void> {
    if (this.startDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.startDelayMs));
  }

  private async destroy(sandbox: SandboxRecord): Promise<void> {
    if (sandbox.state === "destroyed" || sandbox.state === "destroying") return;
    await this.transition(
      sandbox,
      "destroying",
      async () => {
        for (const commands of sandbox.sessions.values()) for (const c of commands.values()) c.stdin?.destroy();
        if (sandbox.containerId) {
          await this.docker
            .getContainer(sandbox.containerId)
            .remove({ force: true })
            .catch(() => {});
        }
        if (sandbox.archiveImage) {
          await this.docker
            .getImage(sandbox.archiveImage)
            .remove({ force: true })
            .catch(() => {});
        }
        sandbox.containerId = undefined;
        sandbox.archiveImage = undefined;
      },
      "destroyed",
    );
  }

  private async createContainer(sandbox: SandboxRecord, image: string): Promise<void> {
    const home = sandbox.env.HOME ?? "/home/computer";
    const container = await this.docker.createContainer({
      name: `daytona-emulator-${this.id}-${sandbox.id.slice(0, 13)}-${randomBytes(2).toString("hex")}`,
      Image: image,
      Cmd: ["sleep", "infinity"],
      Entrypoint: [],
      User: this.workspaceUser,
      WorkingDir: "/",
      // The screen gateway admits the host's end of the container's network: where this proxy connects from.
      Env: [
        ...Object.entries(sandbox.env).map(([k, v]) => `${k}=${v}`),
        `HOME=${home}`,
        "LANG=C.UTF-8",
        "AGENT_COMPUTER_GATEWAY_SOURCES=default-gateway",
      ],
      Labels: { [EMULATOR_LABEL]: this.id, "agent-computer.test/daytona-sandbox": sandbox.id },
      HostConfig: {
        Init: true,
        ShmSize: COMPUTER_SHM_BYTES,
        SecurityOpt: [`seccomp=${computerSeccompProfile()}`, "no-new-privileges:true"],
        CapDrop: ["ALL"],
        CapAdd: ["SYS_CHROOT"],
        NetworkMode: this.options.network ?? "bridge",
      },
    });
    sandbox.containerId = container.id;
    await container.start();
  }

  private async stopContainer(sandbox: SandboxRecord): Promise<void> {
    for (const commands of sandbox.sessions.values()) for (const c of commands.values()) c.stdin?.destroy();
    sandbox.sessions.clear();
    await this.docker
      .getContainer(sandbox.containerId as string)
      .stop({ t: 1 })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 304) throw error;
      });
  }

  /** Archive: the container's filesystem becomes an image (the home with it) and the container goes. */
  private async archiveContainer(sandbox: SandboxRecord): Promise<void> {
    const container = this.docker.getContainer(sandbox.containerId as string);
    const repo = `agent-computer-test/daytona-archive-${this.id}`;
    const tag = sandbox.id;
    await container.commit({ repo, tag, changes: [`LABEL ${EMULATOR_LABEL}=${this.id}`] });
    if (sandbox.archiveImage && sandbox.archiveImage !== `${repo}:${tag}`) {
      await this.docker
        .getImage(sandbox.archiveImage)
        .remove({ force: true })
        .catch(() => {});
    }
    sandbox.archiveImage = `${repo}:${tag}`;
    await container.remove({ force: true });
    sandbox.containerId = undefined;
  }

  /** Toolbox calls: answered only while the sandbox runs, as Daytona's proxy does. */
  private runningSandbox(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox || sandbox.state === "destroyed") throw new HttpAnswer(404, "sandbox not found");
    // An archived sandbox's toolbox answers 404 (Daytona #4632); one changing state, 502 (#4142).
    if (sandbox.state === "archived") throw new HttpAnswer(404, "sandbox not found");
    if (sandbox.state === "stopped") throw new HttpAnswer(400, "sandbox is not running");
    if (sandbox.state !== "started") throw new HttpAnswer(502, "bad gateway");
    return sandbox;
  }

  private async toolbox(method: string, url: URL, body: unknown): Promise<unknown> {
    const [, , id, ...rest] = url.pathname.split("/").map(decodeURIComponent);
    const sandbox = this.runningSandbox(id as string);
    const path = rest.join("/");
    const request = (body ?? {}) as Record<string, unknown>;
    const on = (verb: string, pattern: RegExp) => (method === verb ? pattern.exec(path) : null);
    if (path === "process/session" && method === "POST") {
      const sessionId = String(request.sessionId);
      if (sandbox.sessions.has(sessionId)) throw new HttpAnswer(409, "session already exists");
      sandbox.sessions.set(sessionId, new Map());
      return undefined;
    }
    const deleted = on("DELETE", /^process\/session\/([^/]+)$/);
    if (deleted) {
      if (!sandbox.sessions.delete(deleted[1] as string)) throw new HttpAnswer(404, "session not found");
      return undefined;
    }
    const execute = on("POST", /^process\/session\/([^/]+)\/exec$/);
    if (execute) {
      const session = this.session(sandbox, execute[1] as string);
      const command = await this.exec(sandbox, String(request.command));
      session.set(command.id, command);
      if (request.runAsync === true) return { cmdId: command.id };
      await command.done;
      return {
        cmdId: command.id,
        exitCode: command.exitCode,
        output: Buffer.concat(command.log).toString("utf8"),
        stdout: Buffer.concat(command.stdout).toString("utf8"),
        stderr: Buffer.concat(command.stderr).toString("utf8"),
      };
    }
    const status = on("GET", /^process\/session\/([^/]+)\/command\/([^/]+)$/);
    if (status) {
      const command = this.command(sandbox, status[1] as string, status[2] as string);
      return { id: command.id, command: command.command, exitCode: command.exitCode };
    }
    const logs = on("GET", /^process\/session\/([^/]+)\/command\/([^/]+)\/logs$/);
    if (logs) {
      const command = this.command(sandbox, logs[1] as string, logs[2] as string);
      return {
        output: Buffer.concat(command.log).toString("utf8"),
        stdout: Buffer.concat(command.stdout).toString("utf8"),
        stderr: Buffer.concat(command.stderr).toString("utf8"),
      };
    }
    const input = on("POST", /^process\/session\/([^/]+)\/command\/([^/]+)\/input$/);
    if (input) {
      const command = this.command(sandbox, input[1] as string, input[2] as string);
      if (command.exitCode !== undefined || !command.stdin) throw new HttpAnswer(400, "command is not running");
      const data = String(request.data ?? "");
      await new Promise<void>((resolve, reject) =>
        (command.stdin as Duplex).write(data, (error) => (error ? reject(error) : resolve())),
      );
      return undefined;
    }
    throw new HttpAnswer(404, `no toolbox route ${method} ${path}`);
  }

  /** Bulk upload: each file part streams into the sandbox through `cat` as its user. */
  private async upload(url: URL, req: IncomingMessage): Promise<void> {
    const sandbox = this.runningSandbox(decodeURIComponent(url.pathname.split("/")[2] as string));
    const container = this.docker.getContainer(sandbox.containerId as string);
    await readMultipart(req, req.headers["content-type"] ?? "", async (part) => {
      const index = /^files\[(\d+)\]\.file$/.exec(part.name)?.[1];
      const path = index === undefined ? undefined : part.fields[`files[${index}].path`];
      if (!path) {
        part.body.resume();
        throw new HttpAnswer(400, `upload part ${part.name} has no path`);
      }
      const exec = await container.exec({
        Cmd: ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "upload", path],
        User: this.workspaceUser,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
      const ended = new Promise<void>((resolve) => {
        stream.on("data", () => {});
        stream.once("end", resolve);
        stream.once("close", resolve);
      });
      for await (const chunk of part.body) {
        if (!stream.write(chunk)) await new Promise((resolve) => stream.once("drain", resolve));
      }
      // Half-close: cat sees the end of its input and exits.
      (stream as unknown as { end(): void }).end();
      await ended;
      const info = await exec.inspect();
      if (info.ExitCode !== 0) throw new HttpAnswer(400, `could not write ${path} (exit ${info.ExitCode})`);
    });
  }

  /** Bulk download: one multipart part per path, its bytes streamed from `cat` in the sandbox. */
  private async download(url: URL, body: { paths?: string[] }, res: ServerResponse): Promise<void> {
    const sandbox = this.runningSandbox(decodeURIComponent(url.pathname.split("/")[2] as string));
    const container = this.docker.getContainer(sandbox.containerId as string);
    const boundary = `emulator-${randomBytes(8).toString("hex")}`;
    res.writeHead(200, { "content-type": `multipart/form-data; boundary=${boundary}` });
    for (const path of body.paths ?? []) {
      const exec = await container.exec({
        Cmd: ["cat", "--", path],
        User: this.workspaceUser,
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
      const stderr: Buffer[] = [];
      let opened = false;
      const open = () => {
        if (opened) return;
        opened = true;
        res.write(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        );
      };
      // A client gone mid-download must not leave the engine's stream paused: the engine then
      // never finishes the exec, and every later exec in the container hangs.
      res.once("close", () => stream.resume());
      await new Promise<void>((resolve) => {
        demux(
          stream,
          (chunk) => {
            open();
            if (!res.write(chunk) && !stream.isPaused()) {
              stream.pause();
              res.once("drain", () => stream.resume());
            }
          },
          (chunk) => stderr.push(chunk),
        );
        stream.once("end", resolve);
        stream.once("close", resolve);
      });
      const info = await exec.inspect();
      if (info.ExitCode === 0) {
        open();
        res.write("\r\n");
      } else if (!opened) {
        const message = JSON.stringify({ message: Buffer.concat(stderr).toString("utf8").trim(), statusCode: 404 });
        res.write(
          `--${boundary}\r\nContent-Disposition: form-data; name="error"; filename="${path}"\r\nContent-Type: application/json\r\n\r\n${message}\r\n`,
        );
      } else {
        res.destroy();
        return;
      }
    }
    res.end(`--${boundary}--\r\n`);
  }

  private session(sandbox: SandboxRecord, sessionId: string): Map<string, SessionCommandRecord> {
    const session = sandbox.sessions.get(sessionId);
    if (!session) throw new HttpAnswer(404, `session ${sessionId} not found`);
    return session;
  }

  private command(sandbox: SandboxRecord, sessionId: string, commandId: string): SessionCommandRecord {
    const command = this.session(sandbox, sessionId).get(commandId);
    if (!command) throw new HttpAnswer(404, `command ${commandId} not found`);
    return command;
  }

  /** One session command: an exec in the container, its output labelled into one log as the daemon does. */
  private async exec(sandbox: SandboxRecord, line: string): Promise<SessionCommandRecord> {
    const container = this.docker.getContainer(sandbox.containerId as string);
    const exec = await container.exec({
      Cmd: ["/bin/sh", "-c", line],
      User: this.workspaceUser,
      WorkingDir: "/",
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    const record: SessionCommandRecord = {
      id: randomUUID(),
      command: line,
      exitCode: undefined,
      log: [],
      stdout: [],
      stderr: [],
      followers: new Set(),
      stdin: stream,
      done: Promise.resolve(),
    };
    const emit = (prefix: Buffer, chunk: Buffer, into: Buffer[]) => {
      into.push(chunk);
      const labelled = Buffer.concat([prefix, chunk]);
      record.log.push(labelled);
      for (const ws of record.followers) ws.send(labelled);
    };
    record.done = new Promise<void>((resolve) => {
      demux(
        stream,
        (chunk) => emit(STDOUT_PREFIX, chunk, record.stdout),
        (chunk) => emit(STDERR_PREFIX, chunk, record.stderr),
      );
      const finish = async () => {
        const info = await exec.inspect().catch(() => undefined);
        record.exitCode = info?.ExitCode ?? -1;
        record.stdin = undefined;
        for (const ws of record.followers) ws.close(1000);
        record.followers.clear();
        resolve();
      };
      stream.once("end", () => void finish());
      stream.once("close", () => void (record.exitCode === undefined && finish()));
    });
    this.sockets.add(stream);
    stream.once("close", () => this.sockets.delete(stream));
    return record;
  }

  private handleApiUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://emulator");
    this.requests.push(`WS ${url.pathname}`);
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    };
    if (url.pathname === "/api/socket.io/" && url.searchParams.get("transport") === "websocket") {
      // Authenticated inside the protocol (CONNECT's auth.token), as Daytona's is.
      this.wss.handleUpgrade(req, socket, head, (ws) => this.serveEvents(ws));
      return;
    }
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      refuse(401, "Unauthorized");
      return;
    }
    const fault = this.takeFault("WS", url.pathname);
    if (fault) {
      this.refusals.push(`${fault.status} WS ${url.pathname}`);
      refuse(fault.status, "Injected");
      return;
    }
    const match = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/.exec(url.pathname);
    if (!match) {
      refuse(404, "Not Found");
      return;
    }
    let command: SessionCommandRecord;
    try {
      const sandbox = this.runningSandbox(decodeURIComponent(match[1] as string));
      command = this.command(sandbox, decodeURIComponent(match[2] as string), decodeURIComponent(match[3] as string));
    } catch (error) {
      refuse(error instanceof HttpAnswer ? error.status : 500, "Refused");
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      for (const chunk of command.log) ws.send(chunk);
      if (command.exitCode !== undefined) {
        ws.close(1000);
        return;
      }
      if (this.dropLogStreams > 0) {
        this.dropLogStreams--;
        // Mid-command: the connection goes without a close frame, as a broken proxy's does.
        setTimeout(() => ws.terminate(), 300);
        return;
      }
      command.followers.add(ws);
      ws.once("close", () => command.followers.delete(ws));
    });
  }

  // ---- preview proxy ------------------------------------------------------

  /** The sandbox container's address for a preview token, or the reason it has none. */
  private async previewTarget(url: URL): Promise<{ host: string; port: number } | HttpAnswer> {
    const token = url.searchParams.get(PREVIEW_TOKEN_PARAM);
    const grant = token ? this.previews.get(token) : undefined;
    if (!grant || grant.expiresAt < Date.now()) return new HttpAnswer(401, "missing or expired preview token");
    const sandbox = this.sandboxes.get(grant.sandboxId);
    if (!sandbox?.containerId || sandbox.state !== "started") return new HttpAnswer(502, "sandbox is not running");
    const info = await this.docker.getContainer(sandbox.containerId).inspect();
    const host = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress;
    if (!host) return new HttpAnswer(502, "sandbox has no address");
    return { host, port: grant.port };
  }

  private async handlePreview(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://preview");
    const target = await this.previewTarget(url);
    if (target instanceof HttpAnswer) {
      res.writeHead(target.status, { "content-type": "text/plain" }).end(target.message);
      return;
    }
    url.searchParams.delete(PREVIEW_TOKEN_PARAM);
    const forward = httpRequest(
      {
        host: target.host,
        port: target.port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: { ...req.headers, host: `${target.host}:${target.port}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end("the sandbox's port did not answer");
      else res.destroy();
    });
    req.pipe(forward);
  }

  private async handlePreviewUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? "/", "http://preview");
    const target = await this.previewTarget(url);
    if (target instanceof HttpAnswer) {
      socket.end(`HTTP/1.1 ${target.status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    url.searchParams.delete(PREVIEW_TOKEN_PARAM);
    const upstream = connect(target.port, target.host, () => {
      const lines = [`${req.method} ${url.pathname}${url.search} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i] as string;
        lines.push(
          `${name}: ${name.toLowerCase() === "host" ? `${target.host}:${target.port}` : req.rawHeaders[i + 1]}`,
        );
      }
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    this.sockets.add(upstream);
    const end = () => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.once("error", end);
    socket.once("error", end);
    upstream.once("close", () => {
      this.sockets.delete(upstream);
      socket.destroy();
    });
    socket.once("close", () => upstream.destroy());
  }
}

/** The query parameter of the emulator's signed preview URLs that carries the token. */
export const PREVIEW_TOKEN_PARAM = "daytona-preview-token";

/** The image a create asks for: a snapshot (mapped, or itself an image) or a build's `FROM`. */
function imageOf(body: Record<string, unknown>, snapshots: Record<string, string> | undefined): string {
  if (typeof body.snapshot === "string" && body.snapshot) return snapshots?.[body.snapshot] ?? body.snapshot;
  const dockerfile = (body.buildInfo as { dockerfileContent?: string } | undefined)?.dockerfileContent;
  const from = dockerfile ? /^\s*FROM\s+(\S+)/im.exec(dockerfile)?.[1] : undefined;
  if (!from) throw new HttpAnswer(400, "a snapshot or an image is required");
  return from;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  const text = Buffer.concat(chunks).toString("utf8");
  if (!/json/.test(req.headers["content-type"] ?? "")) return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpAnswer(400, "malformed JSON");
  }
}

/** Splits Docker's multiplexed exec stream (8-byte frame headers) into stdout and stderr. */
function demux(stream: Duplex, onStdout: (chunk: Buffer) => void, onStderr: (chunk: Buffer) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  stream.on("data", (data: Buffer) => {
    pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4);
      if (pending.length < 8 + size) break;
      const kind = pending[0];
      const payload = pending.subarray(8, 8 + size);
      pending = pending.subarray(8 + size);
      if (kind === 2) onStderr(Buffer.from(payload));
      else onStdout(Buffer.from(payload));
    }
  });
}
