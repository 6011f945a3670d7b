import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type FaultRule,
  FaultRules,
  HttpAnswer,
  type LoopbackServer,
  LoopbackServers,
  type PortTarget,
  proxyHttp,
  proxyUpgrade,
  readBody,
  readJson,
  refuseUpgrade,
  sendJson,
} from "@agent-computer/testing/emulator";
import { WebSocketServer } from "ws";
import type { DaytonaEmulatorOptions, EmulatedSandboxState } from "./daytona-emulator-options.js";
import { EMULATOR_LABEL, labelled, Sandbox, type SandboxHost, type SessionCommand } from "./daytona-sandbox.js";
import { SocketIoChannel } from "./socket-io-channel.js";

/** The query parameter of the emulator's signed preview URLs that carries the token. */
export const PREVIEW_TOKEN_PARAM = "daytona-preview-token";

/**
 * A loopback Daytona for tests (docs/architecture.md §12): a real HTTP
 * server speaking exactly the calls `@daytonaio/sdk` 0.218 makes for the
 * provider: the REST API with the sandbox state machine (create, get,
 * list by labels, start, stop, archive, delete, signed preview URLs,
 * activity), the toolbox under the proxy URL it returns (sessions, async
 * session exec, the command's logs as JSON or over a websocket with the
 * SDK's 01 01 01 / 02 02 02 stream markers, input, bulk upload and
 * download), the preview proxy that reaches a sandbox's port with plain
 * HTTP and websocket upgrades, and the socket.io events channel
 * (`sandbox.state.updated`) the SDK listens on by default; its polling
 * mode works too.
 *
 * Each sandbox is a real container of the computer image on the given
 * Docker engine (the emulator kit's `ComputerContainers`); archive commits
 * the container to an image and removes it, and a start from archive
 * recreates it from that image. Faults: `inject` answers matching calls
 * with a status (5xx, the transient 404/502 of Daytona #4632/#4142),
 * `startDelayMs` makes starts slow, `startAnswerWaitMs` makes a start call
 * wait and then answer 504 the way a proxy in front of the server's own
 * 30 s wait does, and `dropNextLogStream` cuts a command's log websocket
 * mid-command.
 */
export class DaytonaEmulator {
  readonly id: string;
  private readonly host: SandboxHost;
  private readonly apiKey: string;
  private readonly sandboxes = new Map<string, Sandbox>();
  private readonly previews = new Map<string, { sandboxId: string; port: number; expiresAt: number }>();
  private readonly faults = new FaultRules();
  private readonly servers = new LoopbackServers();
  private readonly api: LoopbackServer;
  private readonly preview: LoopbackServer;
  private readonly wss = new WebSocketServer({ noServer: true });
  /** The events channel; its clients passed the socket.io CONNECT with the API key. */
  private readonly events: SocketIoChannel;
  private dropLogStreams = 0;
  /** Every request the emulator answered, as `METHOD path` (tests read what the SDK sent). */
  readonly requests: string[] = [];
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
    this.host = { containers, user: this.workspaceUser, network: options.network, open: this.servers.sockets };
    this.events = new SocketIoChannel((auth) => auth.token === this.apiKey);
    this.api = this.servers.serve(
      (req, res) => void this.handleApi(req, res),
      (req, socket, head) => this.handleApiUpgrade(req, socket, head),
    );
    this.preview = this.servers.serve(
      (req, res) => {
        const target = this.previewTarget(req);
        if (target instanceof HttpAnswer)
          res.writeHead(target.status, { "content-type": "text/plain" }).end(target.message);
        else proxyHttp(req, res, target);
      },
      (req, socket, head) => {
        const target = this.previewTarget(req);
        if (target instanceof HttpAnswer) refuseUpgrade(socket, target.status);
        else proxyUpgrade(req, socket, head, target, this.servers.sockets);
      },
    );
  }

  /** The `apiUrl` to give the provider (and the SDK). */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.api.port}/api`;
  }

  async start(): Promise<void> {
    await this.servers.listen();
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    // A sandbox's archive first: an earlier archive, its parent, can go only after it.
    for (const { archiveImage } of this.sandboxes.values())
      if (archiveImage) await this.host.containers.removeImage(archiveImage);
    await this.host.containers.removeAll();
    for (const client of this.wss.clients) client.terminate();
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
    await this.transition(sandbox, "stopping", () => sandbox.stopContainer(), "stopped");
  }

  /** Archives a sandbox behind the provider's back (auto-archive). */
  async archiveBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.require(id);
    if (sandbox.state === "started") await this.stopBehindTheProvider(id);
    await this.transition(sandbox, "archiving", () => sandbox.archiveContainer(), "archived");
  }

  // ---- REST and toolbox -------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${url.pathname}`);
    try {
      if (req.headers.authorization !== `Bearer ${this.apiKey}`) throw new HttpAnswer(401, "Invalid credentials");
      const fault = this.faults.take(method, url.pathname);
      const injected = (f: FaultRule) => new HttpAnswer(f.status, f.message ?? `injected ${f.status}`);
      if (fault && !fault.after) throw injected(fault);
      // Bulk transfers answer themselves (a fault `after` one is not answered).
      const bulk = method === "POST" ? /^\/toolbox\/([^/]+)\/files\/bulk-(upload|download)$/.exec(url.pathname) : null;
      if (bulk?.[2] === "upload") {
        await this.runningSandbox(decodeURIComponent(bulk[1] as string)).upload(req);
        sendJson(res, 200, {});
        return;
      }
      const body = await bodyOf(req);
      if (bulk?.[2] === "download") {
        await this.runningSandbox(decodeURIComponent(bulk[1] as string)).download(body as { paths?: string[] }, res);
        return;
      }
      const [, root, id, ...rest] = url.pathname.split("/").map(decodeURIComponent);
      let answer: unknown;
      if (root === "api") answer = await this.rest(method, url, body);
      else if (root === "toolbox")
        answer = await this.runningSandbox(id as string).toolbox(method, rest.join("/"), body);
      else throw new HttpAnswer(404, `no route ${url.pathname}`);
      if (fault) throw injected(fault);
      sendJson(res, answer === undefined ? 204 : 200, answer);
    } catch (error) {
      const status = error instanceof HttpAnswer ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      this.refusals.push(`${status} ${method} ${url.pathname}`);
      const body = { statusCode: status, message, error: "emulated" };
      if (res.headersSent) res.end(JSON.stringify(body));
      else sendJson(res, status, body);
    }
  }

  private async rest(method: string, url: URL, body: unknown): Promise<unknown> {
    const [root, id, verb, arg, sub] = url.pathname.slice("/api/".length).split("/").map(decodeURIComponent);
    if (root !== "sandbox") throw new HttpAnswer(404, `no route ${url.pathname}`);
    if (id === undefined && method === "POST") return this.create(body as Record<string, unknown>);
    if (id === undefined && method === "GET") return this.list(url);
    const sandbox = this.find(id as string);
    if (verb === undefined && method === "GET") return this.dto(sandbox);
    if (verb === undefined && method === "DELETE") {
      void this.destroy(sandbox);
      return this.dto(sandbox);
    }
    if (verb === "start" && method === "POST") return this.startSandbox(sandbox);
    if (verb === "stop" && method === "POST") {
      if (sandbox.state === "stopped") return this.dto(sandbox);
      if (sandbox.state !== "started")
        throw new HttpAnswer(400, `Sandbox is ${sandbox.state}; it cannot be stopped now`);
      void this.transition(sandbox, "stopping", () => sandbox.stopContainer(), "stopped");
      return this.dto(sandbox);
    }
    if (verb === "archive" && method === "POST") {
      if (sandbox.state !== "stopped") throw new HttpAnswer(400, "Sandbox must be stopped before it is archived");
      void this.transition(sandbox, "archiving", () => sandbox.archiveContainer(), "archived");
      return this.dto(sandbox);
    }
    if (verb === "last-activity" && method === "POST") {
      sandbox.lastActivityAt = new Date().toISOString();
      return undefined;
    }
    if (verb === "autostop" && method === "POST") {
      sandbox.autoStopInterval = Number(arg);
      return undefined;
    }
    if (verb === "toolbox-proxy-url" && method === "GET") return { url: this.toolboxProxyUrl() };
    if (verb === "ports" && sub === "signed-preview-url" && method === "GET") {
      const port = Number(arg);
      const expiresAt = Date.now() + Number(url.searchParams.get("expiresInSeconds") ?? 60) * 1000;
      const token = randomBytes(16).toString("hex");
      this.previews.set(token, { sandboxId: sandbox.id, port, expiresAt });
      const signed = `http://127.0.0.1:${this.preview.port}/?${PREVIEW_TOKEN_PARAM}=${token}`;
      return { sandboxId: sandbox.id, port, token, url: signed };
    }
    throw new HttpAnswer(404, `no route ${method} ${url.pathname}`);
  }

  private toolboxProxyUrl(): string {
    return `http://127.0.0.1:${this.api.port}/toolbox`;
  }

  private create(body: Record<string, unknown>): unknown {
    const sandbox = new Sandbox(this.host, imageOf(body, this.options.snapshots), body);
    this.sandboxes.set(sandbox.id, sandbox);
    const work = async () => {
      await sandbox.createContainer(sandbox.image);
      await this.slowStart();
    };
    void this.transition(sandbox, "creating", work, "started");
    return this.dto(sandbox);
  }

  private async startSandbox(sandbox: Sandbox): Promise<unknown> {
    if (sandbox.state === "started") return this.dto(sandbox);
    if (sandbox.state !== "stopped" && sandbox.state !== "archived") {
      throw new HttpAnswer(400, `Sandbox is ${sandbox.state}; it cannot be started now`);
    }
    const fromArchive = sandbox.state === "archived";
    const work = async () => {
      if (fromArchive) await sandbox.createContainer(sandbox.archiveImage as string);
      else await sandbox.startContainer();
      await this.slowStart();
    };
    const started = this.transition(sandbox, fromArchive ? "restoring" : "starting", work, "started");
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
      networkBlockAll: false,
      target: "local",
      cpu: 2,
      gpu: 0,
      memory: 4,
      disk: 10,
      state: s.state,
      desiredState: s.state === "stopped" || s.state === "archived" ? s.state : "started",
      errorReason: s.errorReason,
      backupState: "None",
      autoStopInterval: s.autoStopInterval,
      autoArchiveInterval: 10080,
      autoDeleteInterval: -1,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      lastActivityAt: s.lastActivityAt,
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

  // ---- the state machine ----------------------------------------------------

  /** Runs one state change after the one under way: `during` while it works, `after` once done (or "error"). */
  private transition(
    sandbox: Sandbox,
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

  /** A new state, told on the events channel as Daytona tells it. */
  private setState(sandbox: Sandbox, state: EmulatedSandboxState): void {
    const oldState = sandbox.state;
    sandbox.state = state;
    sandbox.updatedAt = new Date().toISOString();
    this.events.emit("sandbox.state.updated", { sandbox: this.dto(sandbox), oldState, newState: state });
  }

  private async slowStart(): Promise<void> {
    if (this.startDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.startDelayMs));
  }

  private async destroy(sandbox: Sandbox): Promise<void> {
    if (sandbox.state === "destroyed" || sandbox.state === "destroying") return;
    await this.transition(sandbox, "destroying", () => sandbox.remove(), "destroyed");
  }

  // ---- websockets: the events channel and a command's log ---------------------

  private handleApiUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://emulator");
    this.requests.push(`WS ${url.pathname}`);
    if (url.pathname === "/api/socket.io/" && url.searchParams.get("transport") === "websocket") {
      // Authenticated inside the protocol (CONNECT's auth.token), as Daytona's is.
      this.wss.handleUpgrade(req, socket, head, (ws) => this.events.accept(ws));
      return;
    }
    const command = this.logStreamOf(req, url);
    if (!("output" in command)) {
      refuseUpgrade(socket, command.status, command.reason);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      for (const { stream, chunk } of command.output) ws.send(labelled(stream, chunk));
      if (command.exitCode !== undefined) {
        ws.close(1000);
      } else if (this.dropLogStreams > 0) {
        this.dropLogStreams--;
        // Mid-command: the connection goes without a close frame, as a broken proxy's does.
        setTimeout(() => ws.terminate(), 300);
      } else {
        const follower = {
          data: (stream: 1 | 2, chunk: Buffer) => ws.send(labelled(stream, chunk)),
          end: () => ws.close(1000),
        };
        command.followers.add(follower);
        ws.once("close", () => command.followers.delete(follower));
      }
    });
  }

  /** The command whose log a websocket asks for, or how its upgrade is refused. */
  private logStreamOf(req: IncomingMessage, url: URL): SessionCommand | { status: number; reason: string } {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return { status: 401, reason: "Unauthorized" };
    const fault = this.faults.take("WS", url.pathname);
    if (fault) {
      this.refusals.push(`${fault.status} WS ${url.pathname}`);
      return { status: fault.status, reason: "Injected" };
    }
    const match = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/.exec(url.pathname);
    if (!match) return { status: 404, reason: "Not Found" };
    try {
      const [sandboxId, sessionId, commandId] = match.slice(1).map(decodeURIComponent) as [string, string, string];
      return this.runningSandbox(sandboxId).command(sessionId, commandId);
    } catch (error) {
      return { status: error instanceof HttpAnswer ? error.status : 500, reason: "Refused" };
    }
  }

  // ---- the preview proxy ------------------------------------------------------

  /** The sandbox's port for a preview token (the token taken off the path), or the reason it has none. */
  private previewTarget(req: IncomingMessage): PortTarget | HttpAnswer {
    const url = new URL(req.url ?? "/", "http://preview");
    const token = url.searchParams.get(PREVIEW_TOKEN_PARAM);
    const grant = token ? this.previews.get(token) : undefined;
    if (!grant || grant.expiresAt < Date.now()) return new HttpAnswer(401, "missing or expired preview token");
    const sandbox = this.sandboxes.get(grant.sandboxId);
    if (!sandbox?.containerId || sandbox.state !== "started") return new HttpAnswer(502, "sandbox is not running");
    if (!sandbox.ip) return new HttpAnswer(502, "sandbox has no address");
    url.searchParams.delete(PREVIEW_TOKEN_PARAM);
    return { host: sandbox.ip, port: grant.port, path: `${url.pathname}${url.search}` };
  }
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
