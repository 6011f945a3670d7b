import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
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
import { DEFAULT_CONFIRM_DELETE_HEADER } from "../box-client.js";

/** Every container and image an emulator makes carries this label (its value: the emulator's id). */
export const BOX_EMULATOR_LABEL = "agent-computer.test/box-emulator";
/** What a sync command's stdout and stderr are each cut to (the service cuts too; its size is not documented). */
export const SYNC_OUTPUT_CAP = 1024 * 1024;
/** Where the `host` shim reads its route base and key inside a box. */
const ROUTE_FILE = "/etc/box-route";

/** A fault: the next `times` calls that match are answered with `status` (and `code`). */
export interface BoxFaultRule {
  method?: string;
  /** Matched against the request path (`/boxes/<id>/commands`, ...). */
  path: RegExp;
  status: number;
  code?: string;
  /** The error's message (default "injected fault"). */
  message?: string;
  /** Make the call first, then answer the fault: an answer lost after the work was done. */
  after?: boolean;
  times?: number;
  /** Let this many matching calls through before the fault starts (default 0). */
  skip?: number;
}

export interface BoxEmulatorOptions {
  docker: Docker;
  /** The only key the API takes (`Authorization: Bearer <key>`). */
  apiKey: string;
  /** The image of a box created without `from` (the computer image in tests). */
  baseImage: string;
  /** Named snapshots and the images they stand for. */
  snapshots?: Record<string, string>;
  /** The account's environment, put into every box created or resumed without `noEnv: true`. */
  accountEnv?: Record<string, string>;
  /** uid:gid commands run as (default "1000:1000", the image's user). */
  user?: string;
  /** How often TTLs are checked (default 250 ms). */
  sweepMs?: number;
  /** Where a sync command's stdout and stderr are each cut (default SYNC_OUTPUT_CAP). */
  syncOutputCap?: number;
}

interface DetachedRecord {
  id: string;
  status: "running" | "exited";
  exitCode: number | null;
  stdout: Buffer;
  stderr: Buffer;
}

interface BoxRecord {
  id: string;
  name: string | null;
  state: string;
  ttlSeconds: number;
  expiresAt: number;
  containerId: string | undefined;
  image: string;
  archiveImage: string | undefined;
  noEnv: boolean;
  routeKey: string;
  errorReason: string | null;
  createdAt: string;
  commands: Map<string, DetachedRecord>;
  transition: Promise<void>;
}

class Answer extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A loopback Box service for tests (docs/architecture.md §12): a real HTTP
 * server speaking the API as box-client.ts does (the envelope, errors,
 * states, idempotent create, TTLs, the delete confirmation header, sync
 * and detached commands, base64 files), and a route server for the
 * boxes' private port routes that checks each route's `_token` and
 * forwards HTTP and websocket upgrades to the box's port.
 *
 * Each box is a real container of the image on the given engine, with a
 * `host` shim that answers `host <port> --private` with the route URL and
 * its token. Archive (stop, or a TTL that ran out) commits the container to
 * an image and removes it; resume recreates it from that image under the
 * same box id. Faults: `inject`, `deleteBehindTheProvider`, `breakBox`.
 */
export class BoxEmulator {
  readonly id = randomBytes(4).toString("hex");
  private readonly boxes = new Map<string, BoxRecord>();
  private readonly idempotency = new Map<string, string>();
  private readonly faults: BoxFaultRule[] = [];
  private readonly api: Server;
  private readonly routes: Server;
  private readonly sockets = new Set<Socket | Duplex>();
  private apiPort = 0;
  private routePort = 0;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly user: string;
  /** Every request answered, as `METHOD path` (no query: tokens never land here). */
  readonly requests: string[] = [];
  /** Every refusal, as `STATUS METHOD path`. */
  readonly refusals: string[] = [];
  /** Route requests refused for a missing or wrong token (paths only). */
  readonly refusedRoutes: string[] = [];
  /** Route requests let through to a box's port (paths only). */
  readonly routed: string[] = [];
  /** Every create and resume body's `noEnv`. */
  readonly noEnvSeen: boolean[] = [];
  /** Detached commands started, per box id. */
  readonly detached = new Map<string, number>();
  /** Every create's `from` (null without one). */
  readonly froms: (string | null)[] = [];
  /** Named snapshots made through the API: name, state, image, and the box they came from. */
  private readonly named = new Map<
    string,
    { name: string; state: string; image: string; fromBox: string; createdAt: string }
  >();

  constructor(private readonly options: BoxEmulatorOptions) {
    this.user = options.user ?? "1000:1000";
    this.api = createServer((req, res) => void this.handleApi(req, res));
    this.routes = createServer((req, res) => void this.handleRoute(req, res));
    this.routes.on("upgrade", (req, socket, head) => void this.handleRouteUpgrade(req, socket, head));
    for (const server of [this.api, this.routes]) {
      server.on("connection", (socket) => {
        this.sockets.add(socket);
        socket.once("close", () => this.sockets.delete(socket));
      });
    }
  }

  /** The `baseUrl` to give the provider. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.apiPort}/v1`;
  }

  /** The origin of the private routes. */
  get routeOrigin(): string {
    return `http://127.0.0.1:${this.routePort}`;
  }

  async start(): Promise<void> {
    for (const [server, set] of [
      [this.api, (p: number) => (this.apiPort = p)],
      [this.routes, (p: number) => (this.routePort = p)],
    ] as const) {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const address = server.address();
      set(typeof address === "object" && address ? address.port : 0);
    }
    this.sweeper = setInterval(() => this.sweep(), this.options.sweepMs ?? 250);
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.boxes.values()].map((box) => box.transition.catch(() => {})));
    const filters = { label: [`${BOX_EMULATOR_LABEL}=${this.id}`] };
    const containers = await this.options.docker.listContainers({ all: true, filters });
    await Promise.all(
      containers.map((c) =>
        this.options.docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
    const images = await this.options.docker.listImages({ filters });
    for (const image of images) {
      await this.options.docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => {});
    }
    for (const socket of this.sockets) socket.destroy();
    await Promise.all([this.api, this.routes].map((s) => new Promise((resolve) => s.close(resolve))));
  }

  inject(rule: BoxFaultRule): void {
    this.faults.push({ ...rule, times: rule.times ?? 1 });
  }

  /** The fault this call gets, counted down; none while the rule still lets calls through (`skip`). */
  private faultFor(method: string, path: string): BoxFaultRule | undefined {
    const fault = this.faults.find(
      (f) => (f.times ?? 1) > 0 && (!f.method || f.method === method) && f.path.test(path),
    );
    if (!fault) return undefined;
    if ((fault.skip ?? 0) > 0) {
      fault.skip = (fault.skip ?? 0) - 1;
      return undefined;
    }
    fault.times = (fault.times ?? 1) - 1;
    if (fault.times <= 0) this.faults.splice(this.faults.indexOf(fault), 1);
    return fault;
  }

  /** Drops every fault not yet answered. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  get pendingFaults(): number {
    return this.faults.reduce((sum, f) => sum + (f.times ?? 1), 0);
  }

  stateOf(id: string): string | undefined {
    return this.boxes.get(id)?.state;
  }

  containerOf(id: string): string | undefined {
    return this.boxes.get(id)?.containerId;
  }

  /** The box's TTL deadline (ms since the epoch). */
  expiresAtOf(id: string): number | undefined {
    return this.boxes.get(id)?.expiresAt;
  }

  /** Someone deletes the box at the service: it answers `deleted` from now on. */
  async deleteBehindTheProvider(id: string): Promise<void> {
    const box = this.mustGet(id);
    await box.transition.catch(() => {});
    await this.removeContainer(box);
    box.state = "deleted";
  }

  /** The box breaks in a way resume cannot repair: state `error`, resume refused. */
  async breakBox(id: string, reason = "unrecoverable"): Promise<void> {
    const box = this.mustGet(id);
    await box.transition.catch(() => {});
    await this.removeContainer(box);
    box.state = "error";
    box.errorReason = reason;
  }

  // ---- the API -------------------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://box");
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${url.pathname}`);
    try {
      if (req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
        throw new Answer(401, "unauthorized", "missing or invalid API key");
      }
      const path = url.pathname.replace(/^\/v1/, "");
      const fault = this.faultFor(method, path);
      if (fault && !fault.after)
        throw new Answer(fault.status, fault.code ?? "injected", fault.message ?? "injected fault");
      const body = method === "GET" || method === "DELETE" ? {} : await readJson(req);
      const answer = await this.route(method, path, url, body, req);
      if (fault?.after) throw new Answer(fault.status, fault.code ?? "injected", fault.message ?? "injected fault");
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, ...answer }));
    } catch (error) {
      const answer =
        error instanceof Answer ? error : new Answer(500, "internal", (error as Error)?.message ?? "internal error");
      this.refusals.push(`${answer.status} ${method} ${url.pathname}`);
      const requestId = randomBytes(6).toString("hex");
      res.writeHead(answer.status, { "content-type": "application/json" }).end(
        JSON.stringify({
          ok: false,
          type: "box.error",
          status: answer.status,
          code: answer.code,
          message: answer.message,
          error: { code: answer.code, message: answer.message, status: answer.status, details: {} },
          requestId,
        }),
      );
    }
  }

  private async route(
    method: string,
    path: string,
    url: URL,
    body: Record<string, unknown>,
    req: IncomingMessage,
  ): Promise<Record<string, unknown>> {
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "named-snapshots" && parts.length === 1 && method === "GET") {
      return {
        type: "named_snapshot.list",
        snapshots: [...this.named.values()].map(({ name, state, createdAt }) => ({ name, state, createdAt })),
      };
    }
    if (parts[0] !== "boxes") throw new Answer(404, "not_found", `no route ${method} ${path}`);
    if (parts.length === 1 && method === "POST") return this.create(body, req);
    if (parts.length === 1 && method === "GET") {
      return { type: "box.list", boxes: [...this.boxes.values()].map(view), nextCursor: null };
    }
    const box = this.boxes.get(parts[1] as string);
    if (!box) throw new Answer(404, "box_not_found", "no such box");
    const verb = parts[2];
    if (verb === undefined && method === "GET") return { type: "box", box: view(box) };
    if (verb === undefined && method === "PATCH") {
      if (typeof body.name === "string") box.name = body.name;
      if (typeof body.ttlSeconds === "number") {
        box.ttlSeconds = body.ttlSeconds;
        box.expiresAt = Date.now() + body.ttlSeconds * 1000;
      }
      return { type: "box", box: view(box) };
    }
    if (verb === undefined && method === "DELETE") {
      if (req.headers[DEFAULT_CONFIRM_DELETE_HEADER.toLowerCase()] !== box.id) {
        throw new Answer(400, "confirmation_required", "deleting a box needs the confirmation header naming it");
      }
      await box.transition.catch(() => {});
      await this.removeContainer(box);
      await this.removeArchive(box);
      box.state = "deleted";
      return { type: "box.deleted", id: box.id };
    }
    if (verb === "stop" && method === "POST") {
      if (box.state === "deleted" || box.state === "cancelled") throw new Answer(410, "box_deleted", "box is deleted");
      this.archive(box);
      return { type: "box", box: view(box) };
    }
    if (verb === "resume" && method === "POST") return this.resume(box, body);
    if (box.state === "deleted" || box.state === "cancelled") throw new Answer(410, "box_deleted", "box is deleted");
    if (verb === "commands" && method === "POST") return this.command(box, body);
    if (verb === "commands" && method === "GET" && parts[3]) {
      const record = box.commands.get(parts[3]);
      if (!record) throw new Answer(404, "process_not_found", "no such process");
      const tail = Number(url.searchParams.get("tailBytes") ?? 0);
      return {
        type: "box.command.status",
        processId: record.id,
        status: record.status,
        exitCode: record.exitCode,
        stdout: tail > 0 ? record.stdout.subarray(-tail).toString("utf8") : "",
        stderr: tail > 0 ? record.stderr.subarray(-tail).toString("utf8") : "",
      };
    }
    if (verb === "snapshots" && method === "POST") return this.snapshot(box, body);
    if (verb === "files" && method === "PUT") return this.writeFile(box, body);
    if (verb === "files" && method === "GET") return this.readFile(box, url);
    throw new Answer(404, "not_found", `no route ${method} ${path}`);
  }

  private create(body: Record<string, unknown>, req: IncomingMessage): Record<string, unknown> {
    const key = req.headers["idempotency-key"];
    const earlier = typeof key === "string" ? this.idempotency.get(key) : undefined;
    if (earlier) return { type: "box", box: view(this.mustGet(earlier)) };
    const from = body.from;
    let image = this.options.baseImage;
    if (typeof from === "string") {
      const made = this.named.get(from);
      const named = made?.state === "ready" ? made.image : this.options.snapshots?.[from];
      if (!named) throw new Answer(422, "snapshot_not_found", "no named snapshot of that name");
      image = named;
    }
    this.froms.push(typeof from === "string" ? from : null);
    const ttlSeconds = typeof body.ttlSeconds === "number" ? body.ttlSeconds : 3600;
    this.noEnvSeen.push(body.noEnv === true);
    const box: BoxRecord = {
      id: `box_${randomBytes(8).toString("hex")}`,
      name: null,
      state: "provisioning",
      ttlSeconds,
      expiresAt: Date.now() + ttlSeconds * 1000,
      containerId: undefined,
      image,
      archiveImage: undefined,
      noEnv: body.noEnv === true,
      routeKey: randomBytes(16).toString("hex"),
      errorReason: null,
      createdAt: new Date().toISOString(),
      commands: new Map(),
      transition: Promise.resolve(),
    };
    this.boxes.set(box.id, box);
    if (typeof key === "string") this.idempotency.set(key, box.id);
    box.transition = this.createContainer(box, image).then(
      () => {
        box.state = "ready";
        box.expiresAt = Date.now() + box.ttlSeconds * 1000;
      },
      (error: Error) => {
        box.state = "error";
        box.errorReason = `could not start: ${error.message}`;
      },
    );
    return { type: "box", box: view(box) };
  }

  private async resume(box: BoxRecord, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (box.state === "deleted" || box.state === "cancelled") throw new Answer(410, "box_deleted", "box is deleted");
    if (box.state === "error") throw new Answer(422, "box_unrecoverable", `box cannot be resumed (${box.errorReason})`);
    if (box.state === "archiving") await box.transition.catch(() => {});
    this.noEnvSeen.push(body.noEnv === true);
    if (box.state !== "archived") return { type: "box", box: view(box) };
    box.noEnv = body.noEnv === true;
    if (typeof body.ttlSeconds === "number") box.ttlSeconds = body.ttlSeconds;
    box.state = "provisioning";
    box.transition = this.createContainer(box, box.archiveImage as string).then(
      () => {
        box.state = "ready";
        box.expiresAt = Date.now() + box.ttlSeconds * 1000;
      },
      (error: Error) => {
        box.state = "error";
        box.errorReason = `could not resume: ${error.message}`;
      },
    );
    return { type: "box", box: view(box) };
  }

  /** A named snapshot of a running box's disk: "building" while committed, then "ready". */
  private snapshot(box: BoxRecord, body: Record<string, unknown>): Record<string, unknown> {
    const container = this.running(box);
    const name = body.name;
    if (typeof name !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name)) {
      throw new Answer(400, "invalid_request", "a snapshot name is required");
    }
    if (this.named.get(name)?.state === "ready") throw new Answer(409, "snapshot_exists", "that name is taken");
    const record = {
      name,
      state: "building",
      image: `agent-computer-test/box-snapshot-${this.id}:${name.toLowerCase()}`,
      fromBox: box.id,
      createdAt: new Date().toISOString(),
    };
    this.named.set(name, record);
    const [repo, tag] = record.image.split(":") as [string, string];
    box.transition = container.commit({ repo, tag, changes: [`LABEL ${BOX_EMULATOR_LABEL}=${this.id}`] }).then(
      () => {
        record.state = "ready";
      },
      () => {
        record.state = "failed";
      },
    );
    return { type: "named_snapshot", snapshot: { name, state: record.state, createdAt: record.createdAt } };
  }

  /** The box a named snapshot was made from, and its state. */
  namedSnapshot(name: string): { state: string; fromBox: string } | undefined {
    const found = this.named.get(name);
    return found ? { state: found.state, fromBox: found.fromBox } : undefined;
  }

  /** Whether a box was created with `noEnv: true` (the last create or resume). */
  noEnvOf(id: string): boolean | undefined {
    return this.boxes.get(id)?.noEnv;
  }

  /** Archive: the container's filesystem becomes an image and the container goes (memory is not kept). */
  private archive(box: BoxRecord): void {
    if (box.state !== "ready") return;
    box.state = "archiving";
    box.transition = (async () => {
      const container = this.options.docker.getContainer(box.containerId as string);
      const repo = `agent-computer-test/box-archive-${this.id}`;
      await container.commit({ repo, tag: box.id, changes: [`LABEL ${BOX_EMULATOR_LABEL}=${this.id}`] });
      box.archiveImage = `${repo}:${box.id}`;
      await this.removeContainer(box);
      box.state = "archived";
    })().catch((error: Error) => {
      box.state = "error";
      box.errorReason = `archive failed: ${error.message}`;
    });
  }

  /** The TTL: a ready box past its deadline archives. */
  private sweep(): void {
    const now = Date.now();
    for (const box of this.boxes.values()) if (box.state === "ready" && box.expiresAt < now) this.archive(box);
  }

  private running(box: BoxRecord): Docker.Container {
    if (box.state !== "ready" || !box.containerId) {
      throw new Answer(409, "box_not_running", `box is ${box.state}`);
    }
    return this.options.docker.getContainer(box.containerId);
  }

  private async command(box: BoxRecord, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const container = this.running(box);
    if (typeof body.command !== "string" || body.command === "")
      throw new Answer(400, "invalid_request", "command is required");
    const cwd = typeof body.cwd === "string" && body.cwd ? body.cwd : "/";
    if (body.detached === true) {
      const exec = await container.exec({
        Cmd: ["sh", "-c", body.command],
        User: this.user,
        WorkingDir: cwd,
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
      const record: DetachedRecord = {
        id: `proc_${randomBytes(6).toString("hex")}`,
        status: "running",
        exitCode: null,
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
      };
      const tail = (kept: Buffer, chunk: Buffer) => Buffer.concat([kept, chunk]).subarray(-64 * 1024);
      demux(
        stream,
        (chunk) => (record.stdout = tail(record.stdout, chunk)),
        (chunk) => (record.stderr = tail(record.stderr, chunk)),
      );
      const ended = () => {
        void exec
          .inspect()
          .then((info) => (record.exitCode = info.ExitCode ?? null))
          .catch(() => {})
          .finally(() => (record.status = "exited"));
      };
      stream.once("end", ended);
      stream.once("error", ended);
      box.commands.set(record.id, record);
      this.detached.set(box.id, (this.detached.get(box.id) ?? 0) + 1);
      return { type: "box.command.detached", processId: record.id };
    }
    const seconds = Math.max(1, Math.min(600, Number(body.timeoutSeconds ?? 600)));
    const started = Date.now();
    const exec = await container.exec({
      Cmd: ["timeout", "-s", "KILL", String(seconds), "sh", "-c", body.command],
      User: this.user,
      WorkingDir: cwd,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], sizes: { stdout: 0, stderr: 0 } };
    const cap = this.options.syncOutputCap ?? SYNC_OUTPUT_CAP;
    const keep = (name: "stdout" | "stderr") => (chunk: Buffer) => {
      const room = cap - out.sizes[name];
      if (room > 0) out[name].push(chunk.subarray(0, room));
      out.sizes[name] += chunk.length;
    };
    await new Promise<void>((resolve) => {
      demux(stream, keep("stdout"), keep("stderr"));
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
    const info = await exec.inspect();
    const exitCode = info.ExitCode ?? null;
    const timedOut = exitCode === 137 && Date.now() - started >= seconds * 1000;
    return {
      type: "box.command.result",
      exitCode: timedOut ? null : exitCode,
      stdout: Buffer.concat(out.stdout).toString("utf8"),
      stderr: Buffer.concat(out.stderr).toString("utf8"),
      stdoutTruncated: out.sizes.stdout > cap,
      stderrTruncated: out.sizes.stderr > cap,
      timedOut,
      success: exitCode === 0,
    };
  }

  private async writeFile(box: BoxRecord, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const container = this.running(box);
    if (typeof body.path !== "string" || !body.path.startsWith("/") || typeof body.content !== "string") {
      throw new Answer(400, "invalid_request", "path (absolute) and content are required");
    }
    const bytes = Buffer.from(body.content, body.encoding === "base64" ? "base64" : "utf8");
    const exec = await container.exec({
      Cmd: ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "write", body.path],
      User: this.user,
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
    for (let offset = 0; offset < bytes.length; offset += 1024 * 1024) {
      if (!stream.write(bytes.subarray(offset, offset + 1024 * 1024))) {
        await new Promise((resolve) => stream.once("drain", resolve));
      }
    }
    // Half-close: cat sees the end of its input and exits.
    (stream as unknown as { end(): void }).end();
    await ended;
    const info = await exec.inspect();
    if (info.ExitCode !== 0) throw new Answer(400, "write_failed", `could not write the file (exit ${info.ExitCode})`);
    return { type: "box.file.written", path: body.path, size: bytes.length };
  }

  private async readFile(box: BoxRecord, url: URL): Promise<Record<string, unknown>> {
    const container = this.running(box);
    const path = url.searchParams.get("path");
    if (!path?.startsWith("/")) throw new Answer(400, "invalid_request", "path (absolute) is required");
    const exec = await container.exec({
      Cmd: ["cat", "--", path],
      User: this.user,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve) => {
      demux(
        stream,
        (chunk) => chunks.push(chunk),
        () => {},
      );
      stream.once("end", resolve);
      stream.once("close", resolve);
    });
    const info = await exec.inspect();
    if (info.ExitCode !== 0) throw new Answer(404, "file_not_found", "no such file");
    const encoding = url.searchParams.get("encoding") === "utf8" ? "utf8" : "base64";
    return { type: "box.file", path, encoding, content: Buffer.concat(chunks).toString(encoding) };
  }

  // ---- containers ----------------------------------------------------------

  private async createContainer(box: BoxRecord, image: string): Promise<void> {
    const env = box.noEnv ? {} : (this.options.accountEnv ?? {});
    const container = await this.options.docker.createContainer({
      name: `box-emulator-${this.id}-${box.id.slice(4, 14)}-${randomBytes(2).toString("hex")}`,
      Image: image,
      Cmd: ["sleep", "infinity"],
      Entrypoint: [],
      User: this.user,
      WorkingDir: "/",
      Env: [
        ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
        "HOME=/home/computer",
        "LANG=C.UTF-8",
        // The screen gateway admits the host's end of the container's network: where the route proxy connects from.
        "AGENT_COMPUTER_GATEWAY_SOURCES=default-gateway",
      ],
      Labels: { [BOX_EMULATOR_LABEL]: this.id, "agent-computer.test/box-id": box.id },
      HostConfig: {
        Init: true,
        ShmSize: COMPUTER_SHM_BYTES,
        SecurityOpt: [`seccomp=${computerSeccompProfile()}`, "no-new-privileges:true"],
        CapDrop: ["ALL"],
        CapAdd: ["SYS_CHROOT"],
        NetworkMode: "bridge",
      },
    });
    box.containerId = container.id;
    // The `host` shim and what it needs, as the service's own tooling is in every box.
    await container.putArchive(
      tarOf([
        { name: "usr/local/bin/host", mode: 0o755, body: Buffer.from(HOST_SHIM) },
        {
          name: ROUTE_FILE.slice(1),
          mode: 0o444,
          body: Buffer.from(`origin=${this.routeOrigin}\nbox=${box.id}\nkey=${box.routeKey}\n`),
        },
      ]),
      { path: "/" },
    );
    await container.start();
  }

  private async removeContainer(box: BoxRecord): Promise<void> {
    const id = box.containerId;
    box.containerId = undefined;
    box.commands.clear();
    if (id)
      await this.options.docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => {});
  }

  private async removeArchive(box: BoxRecord): Promise<void> {
    const image = box.archiveImage;
    box.archiveImage = undefined;
    if (image)
      await this.options.docker
        .getImage(image)
        .remove({ force: true })
        .catch(() => {});
  }

  private mustGet(id: string): BoxRecord {
    const box = this.boxes.get(id);
    if (!box) throw new Error(`the emulator has no box ${id}`);
    return box;
  }

  // ---- private routes ------------------------------------------------------

  /** The box container's address for a route path, or why there is none; the token is checked. */
  private async routeTarget(url: URL): Promise<{ host: string; port: number; path: string } | Answer> {
    const match = /^\/(box_[0-9a-f]+)-(\d+)(\/.*)?$/.exec(url.pathname);
    if (!match) return new Answer(404, "route_not_found", "no such route");
    const [, id, portText, rest] = match;
    const box = this.boxes.get(id as string);
    if (!box) return new Answer(404, "route_not_found", "no such route");
    const token = url.searchParams.get("_token") ?? "";
    const expected = routeToken(box.routeKey, box.id, Number(portText));
    if (token.length !== expected.length || !timingSafeEqual(Buffer.from(token), Buffer.from(expected))) {
      this.refusedRoutes.push(url.pathname);
      return new Answer(401, "route_token_required", "this route is private: its token is missing or wrong");
    }
    if (box.state !== "ready" || !box.containerId) return new Answer(502, "box_not_running", "box is not running");
    const info = await this.options.docker.getContainer(box.containerId).inspect();
    const host = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress;
    if (!host) return new Answer(502, "box_not_running", "box has no address");
    url.searchParams.delete("_token");
    this.routed.push(url.pathname);
    return { host, port: Number(portText), path: `${rest ?? "/"}${url.search}` };
  }

  private async handleRoute(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = await this.routeTarget(new URL(req.url ?? "/", "http://route"));
    if (target instanceof Answer) {
      res.writeHead(target.status, { "content-type": "text/plain" }).end(target.message);
      return;
    }
    const forward = httpRequest(
      {
        host: target.host,
        port: target.port,
        method: req.method,
        path: target.path,
        headers: { ...req.headers, host: `${target.host}:${target.port}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end("the box's port did not answer");
      else res.destroy();
    });
    req.pipe(forward);
  }

  private async handleRouteUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const target = await this.routeTarget(new URL(req.url ?? "/", "http://route"));
    if (target instanceof Answer) {
      socket.end(`HTTP/1.1 ${target.status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const upstream = connect(target.port, target.host, () => {
      const lines = [`${req.method} ${target.path} HTTP/1.1`];
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

/** The token of a box's private route of a port. */
function routeToken(key: string, boxId: string, port: number): string {
  return createHmac("sha256", key).update(`${boxId}:${port}`).digest("hex").slice(0, 40);
}

/**
 * `host <port> [--private] [--title <t>]` inside a box: prints the port's
 * route; private routes carry `?_token=` (the same HMAC the emulator
 * checks, from the box's route key).
 */
const HOST_SHIM = `#!/bin/sh
port=$1
case "$port" in ''|*[!0-9]*) echo "usage: host <port> [--private] [--title <title>]" >&2; exit 2;; esac
shift
private=0
for a in "$@"; do [ "$a" = --private ] && private=1; done
exec python3 -c '
import hmac, hashlib, sys
conf = dict(l.rstrip("\\n").split("=", 1) for l in open("${ROUTE_FILE}") if "=" in l)
port, private = sys.argv[1], sys.argv[2] == "1"
url = "%s/%s-%s/" % (conf["origin"], conf["box"], port)
if private:
    url += "?_token=" + hmac.new(conf["key"].encode(), ("%s:%s" % (conf["box"], port)).encode(), hashlib.sha256).hexdigest()[:40]
print(url)
' "$port" "$private"
`;

function view(box: BoxRecord): Record<string, unknown> {
  return {
    id: box.id,
    name: box.name,
    state: box.state,
    ttlSeconds: box.ttlSeconds,
    createdAt: box.createdAt,
    errorReason: box.errorReason,
    subdomain: box.id.replace("_", "-"),
  };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return {};
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    return value && typeof value === "object" ? value : {};
  } catch {
    throw new Answer(400, "invalid_json", "the body is not JSON");
  }
}

/** A ustar archive of regular files owned by root (what putArchive takes). */
function tarOf(files: { name: string; mode: number; body: Buffer }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const file of files) {
    const header = Buffer.alloc(512);
    const field = (offset: number, length: number, value: string) => header.write(value, offset, length, "ascii");
    const octal = (offset: number, length: number, value: number) =>
      field(offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
    field(0, 100, file.name);
    octal(100, 8, file.mode);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, file.body.length);
    octal(136, 12, Math.floor(Date.now() / 1000));
    field(148, 8, "        ");
    field(156, 1, "0");
    field(257, 8, "ustar\u000000");
    let sum = 0;
    for (const byte of header) sum += byte;
    field(148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header, file.body, Buffer.alloc((512 - (file.body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

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
