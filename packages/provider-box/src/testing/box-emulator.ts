import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import {
  ComputerContainers,
  collectCapped,
  demuxEngineStream,
  type FaultRule,
  FaultRules,
  HttpAnswer,
  LoopbackServers,
  proxyHttp,
  proxyUpgrade,
  readJson,
  refuseUpgrade,
  sendJson,
  untilEnded,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { DEFAULT_CONFIRM_DELETE_HEADER } from "../box-client.js";

/** Every container and image an emulator makes carries this label (its value: the emulator's id). */
export const BOX_EMULATOR_LABEL = "agent-computer.test/box-emulator";
/** What a sync command's stdout and stderr are each cut to (the service cuts too; its size is not documented). */
export const SYNC_OUTPUT_CAP = 1024 * 1024;
/** Where the `host` shim reads its route base and key inside a box. */
const ROUTE_FILE = "/etc/box-route";

/** A fault: the next `times` calls that match (path: `/boxes/<id>/commands`, ...) get `status` (and `code`). */
export type BoxFaultRule = Omit<FaultRule, "retryAfter">;

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

type Json = Record<string, unknown>;

/** A detached command: its state and the last 64 KiB of each output. */
class DetachedRecord {
  readonly id = `proc_${randomBytes(6).toString("hex")}`;
  status: "running" | "exited" = "running";
  exitCode: number | null = null;
  stdout: Buffer = Buffer.alloc(0);
  stderr: Buffer = Buffer.alloc(0);
}

/** A box as the service keeps it. */
class BoxRecord {
  readonly id = `box_${randomBytes(8).toString("hex")}`;
  name: string | null = null;
  state = "provisioning";
  expiresAt: number;
  containerId: string | undefined;
  /** The container's address on the bridge, while it runs. */
  ip = "";
  archiveImage: string | undefined;
  readonly routeKey = randomBytes(16).toString("hex");
  errorReason: string | null = null;
  readonly createdAt = new Date().toISOString();
  readonly commands = new Map<string, DetachedRecord>();
  transition = Promise.resolve();

  constructor(
    public ttlSeconds: number,
    public noEnv: boolean,
  ) {
    this.expiresAt = Date.now() + ttlSeconds * 1000;
  }

  get view(): Json {
    const { id, name, state, ttlSeconds, createdAt, errorReason } = this;
    return { id, name, state, ttlSeconds, createdAt, errorReason, subdomain: id.replace("_", "-") };
  }
}

/** An error answer of the API: the status, and the code and message its envelope carries. */
const fail = (status: number, code: string, message: string) => new HttpAnswer(status, { code, message });

/**
 * A loopback Box service for tests (docs/architecture.md §12): a real HTTP
 * server speaking the API as box-client.ts does (the envelope, errors,
 * states, idempotent create, TTLs, the delete confirmation header, sync
 * and detached commands, base64 files), and a route server for the
 * boxes' private port routes that checks each route's `_token` and
 * forwards HTTP and websocket upgrades to the box's port.
 *
 * Each box is a real container of the image on the given engine (the
 * emulator kit's `ComputerContainers`), with a `host` shim that answers
 * `host <port> --private` with the route URL and its token. Archive (stop,
 * or a TTL that ran out) commits the container to an image and removes it;
 * resume recreates it from that image under the same box id. Faults:
 * `inject`, `deleteBehindTheProvider`, `breakBox`.
 */
export class BoxEmulator {
  private readonly containers: ComputerContainers;
  readonly id: string;
  private readonly boxes = new Map<string, BoxRecord>();
  private readonly idempotency = new Map<string, string>();
  private readonly faults = new FaultRules<BoxFaultRule>();
  private readonly servers = new LoopbackServers();
  private readonly api = this.servers.serve((req, res) => void this.handleApi(req, res));
  private readonly routes = this.servers.serve(
    (req, res) => this.handleRoute(req, res),
    (req, socket, head) => this.handleRouteUpgrade(req, socket, head),
  );
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
  /** Named snapshots made through the API: name, state, image (once built), and the box they came from. */
  private readonly named = new Map<
    string,
    { name: string; state: string; image: string; fromBox: string; createdAt: string }
  >();

  constructor(private readonly options: BoxEmulatorOptions) {
    this.user = options.user ?? "1000:1000";
    this.containers = new ComputerContainers(options.docker, BOX_EMULATOR_LABEL);
    this.id = this.containers.instance;
  }

  /** The `baseUrl` to give the provider. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.api.port}/v1`;
  }

  /** The origin of the private routes. */
  get routeOrigin(): string {
    return `http://127.0.0.1:${this.routes.port}`;
  }

  async start(): Promise<void> {
    await this.servers.listen();
    this.sweeper = setInterval(() => this.sweep(), this.options.sweepMs ?? 250);
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.boxes.values()].map((box) => box.transition.catch(() => {})));
    await this.containers.removeAll();
    await this.servers.close();
  }

  inject(rule: BoxFaultRule): void {
    this.faults.inject(rule);
  }

  /** Drops every fault not yet answered. */
  clearFaults(): void {
    this.faults.clear();
  }

  get pendingFaults(): number {
    return this.faults.pending;
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

  /** The box a named snapshot was made from, and its state. */
  namedSnapshot(name: string): { state: string; fromBox: string } | undefined {
    const found = this.named.get(name);
    return found ? { state: found.state, fromBox: found.fromBox } : undefined;
  }

  /** Whether a box was created with `noEnv: true` (the last create or resume). */
  noEnvOf(id: string): boolean | undefined {
    return this.boxes.get(id)?.noEnv;
  }

  /** Someone deletes the box at the service: it answers `deleted` from now on. */
  deleteBehindTheProvider(id: string): Promise<void> {
    return this.lose(id, "deleted");
  }

  /** The box breaks in a way resume cannot repair: state `error`, resume refused. */
  breakBox(id: string, reason = "unrecoverable"): Promise<void> {
    return this.lose(id, "error", reason);
  }

  private async lose(id: string, state: string, reason?: string): Promise<void> {
    const box = this.boxes.get(id);
    if (!box) throw new Error(`the emulator has no box ${id}`);
    await box.transition.catch(() => {});
    await this.removeContainer(box);
    box.state = state;
    if (reason !== undefined) box.errorReason = reason;
  }

  // ---- the API -------------------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://box");
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${url.pathname}`);
    try {
      if (req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
        throw fail(401, "unauthorized", "missing or invalid API key");
      }
      const path = url.pathname.replace(/^\/v1/, "");
      const fault = this.faults.take(method, path);
      const injected = (f: BoxFaultRule) => fail(f.status, f.code ?? "injected", f.message ?? "injected fault");
      if (fault && !fault.after) throw injected(fault);
      const notJson = (e: unknown) => (e instanceof HttpAnswer ? fail(400, "invalid_json", "the body is not JSON") : e);
      const body =
        method === "GET" || method === "DELETE" ? {} : await readJson(req).catch((e) => Promise.reject(notJson(e)));
      const answer = await this.route(method, path, url, body && typeof body === "object" ? (body as Json) : {}, req);
      if (fault?.after) throw injected(fault);
      sendJson(res, 200, { ok: true, ...answer });
    } catch (error) {
      const { status, body } =
        error instanceof HttpAnswer ? error : fail(500, "internal", (error as Error)?.message ?? "internal error");
      const { code, message } = body as { code: string; message: string };
      this.refusals.push(`${status} ${method} ${url.pathname}`);
      const envelope = { ok: false, type: "box.error", status, code, message };
      const requestId = randomBytes(6).toString("hex");
      sendJson(res, status, { ...envelope, error: { code, message, status, details: {} }, requestId });
    }
  }

  private async route(method: string, path: string, url: URL, body: Json, req: IncomingMessage): Promise<Json> {
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "named-snapshots" && parts.length === 1 && method === "GET") {
      const snapshots = [...this.named.values()].map(({ name, state, createdAt }) => ({ name, state, createdAt }));
      return { type: "named_snapshot.list", snapshots };
    }
    if (parts[0] !== "boxes") throw fail(404, "not_found", `no route ${method} ${path}`);
    if (parts.length === 1 && method === "POST") return this.create(body, req);
    if (parts.length === 1 && method === "GET") {
      return { type: "box.list", boxes: [...this.boxes.values()].map((box) => box.view), nextCursor: null };
    }
    const box = this.boxes.get(parts[1] as string);
    if (!box) throw fail(404, "box_not_found", "no such box");
    const verb = parts[2];
    if (verb === undefined && method === "GET") return { type: "box", box: box.view };
    if (verb === undefined && method === "PATCH") {
      if (typeof body.name === "string") box.name = body.name;
      if (typeof body.ttlSeconds === "number") {
        box.ttlSeconds = body.ttlSeconds;
        box.expiresAt = Date.now() + body.ttlSeconds * 1000;
      }
      return { type: "box", box: box.view };
    }
    if (verb === undefined && method === "DELETE") {
      if (req.headers[DEFAULT_CONFIRM_DELETE_HEADER.toLowerCase()] !== box.id) {
        throw fail(400, "confirmation_required", "deleting a box needs the confirmation header naming it");
      }
      await box.transition.catch(() => {});
      await this.removeContainer(box);
      const image = box.archiveImage;
      box.archiveImage = undefined;
      if (image) await this.containers.removeImage(image);
      box.state = "deleted";
      return { type: "box.deleted", id: box.id };
    }
    if (box.state === "deleted" || box.state === "cancelled") throw fail(410, "box_deleted", "box is deleted");
    if (verb === "stop" && method === "POST") {
      this.archive(box);
      return { type: "box", box: box.view };
    }
    if (verb === "resume" && method === "POST") return this.resume(box, body);
    if (verb === "commands" && method === "POST") return this.command(box, body);
    if (verb === "commands" && method === "GET" && parts[3]) {
      const record = box.commands.get(parts[3]);
      if (!record) throw fail(404, "process_not_found", "no such process");
      const tail = Number(url.searchParams.get("tailBytes") ?? 0);
      const last = (output: Buffer) => (tail > 0 ? output.subarray(-tail).toString("utf8") : "");
      const { id: processId, status, exitCode } = record;
      return {
        type: "box.command.status",
        processId,
        status,
        exitCode,
        stdout: last(record.stdout),
        stderr: last(record.stderr),
      };
    }
    if (verb === "snapshots" && method === "POST") return this.snapshot(box, body);
    if (verb === "files" && method === "PUT") return this.writeFile(box, body);
    if (verb === "files" && method === "GET") return this.readFile(box, url);
    throw fail(404, "not_found", `no route ${method} ${path}`);
  }

  private create(body: Json, req: IncomingMessage): Json {
    const key = req.headers["idempotency-key"];
    const earlier = typeof key === "string" ? this.boxes.get(this.idempotency.get(key) ?? "") : undefined;
    if (earlier) return { type: "box", box: earlier.view };
    const from = body.from;
    let image = this.options.baseImage;
    if (typeof from === "string") {
      const made = this.named.get(from);
      const named = made?.state === "ready" ? made.image : this.options.snapshots?.[from];
      if (!named) throw fail(422, "snapshot_not_found", "no named snapshot of that name");
      image = named;
    }
    this.froms.push(typeof from === "string" ? from : null);
    this.noEnvSeen.push(body.noEnv === true);
    const box = new BoxRecord(typeof body.ttlSeconds === "number" ? body.ttlSeconds : 3600, body.noEnv === true);
    this.boxes.set(box.id, box);
    if (typeof key === "string") this.idempotency.set(key, box.id);
    this.provision(box, image, "start");
    return { type: "box", box: box.view };
  }

  private async resume(box: BoxRecord, body: Json): Promise<Json> {
    if (box.state === "error") throw fail(422, "box_unrecoverable", `box cannot be resumed (${box.errorReason})`);
    if (box.state === "archiving") await box.transition.catch(() => {});
    this.noEnvSeen.push(body.noEnv === true);
    if (box.state !== "archived") return { type: "box", box: box.view };
    box.noEnv = body.noEnv === true;
    if (typeof body.ttlSeconds === "number") box.ttlSeconds = body.ttlSeconds;
    this.provision(box, box.archiveImage as string, "resume");
    return { type: "box", box: box.view };
  }

  /** A named snapshot of a running box's disk: "building" while committed, then "ready". */
  private snapshot(box: BoxRecord, body: Json): Json {
    const containerId = this.running(box);
    const name = body.name;
    if (typeof name !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name)) {
      throw fail(400, "invalid_request", "a snapshot name is required");
    }
    if (this.named.get(name)?.state === "ready") throw fail(409, "snapshot_exists", "that name is taken");
    const record = { name, state: "building", image: "", fromBox: box.id, createdAt: new Date().toISOString() };
    this.named.set(name, record);
    box.transition = this.containers.snapshot(containerId, name.toLowerCase()).then(
      (image) => void Object.assign(record, { image, state: "ready" }),
      () => void Object.assign(record, { state: "failed" }),
    );
    return { type: "named_snapshot", snapshot: { name, state: record.state, createdAt: record.createdAt } };
  }

  // ---- containers ----------------------------------------------------------

  /** Creates the box's container from `image` (with the `host` shim and its route file); ready once it runs. */
  private provision(box: BoxRecord, image: string, what: string): void {
    box.state = "provisioning";
    const route = `origin=${this.routeOrigin}\nbox=${box.id}\nkey=${box.routeKey}\n`;
    const spec = {
      image,
      name: box.id.slice(4, 14),
      labels: { "agent-computer.test/box-id": box.id },
      user: this.user,
      env: {
        ...(box.noEnv ? {} : this.options.accountEnv),
        HOME: "/home/computer",
        LANG: "C.UTF-8",
        // The screen gateway admits the host's end of the container's network: where the route proxy connects from.
        AGENT_COMPUTER_GATEWAY_SOURCES: "default-gateway",
      },
      shmBytes: COMPUTER_SHM_BYTES,
      seccompProfile: computerSeccompProfile(),
      // The `host` shim and what it needs, as the service's own tooling is in every box.
      files: [
        { path: "/usr/local/bin/host", mode: 0o755, body: Buffer.from(HOST_SHIM) },
        { path: ROUTE_FILE, mode: 0o444, body: Buffer.from(route) },
      ],
    };
    box.transition = this.containers.create(spec).then(
      ({ id, ip }) =>
        void Object.assign(box, { containerId: id, ip, state: "ready", expiresAt: Date.now() + box.ttlSeconds * 1000 }),
      (error: Error) => void Object.assign(box, { state: "error", errorReason: `could not ${what}: ${error.message}` }),
    );
  }

  /** Archive: the container's filesystem becomes an image and the container goes (memory is not kept). */
  private archive(box: BoxRecord): void {
    if (box.state !== "ready") return;
    box.state = "archiving";
    box.transition = this.containers.archive(box.containerId as string, box.id).then(
      (archiveImage) => {
        box.commands.clear();
        Object.assign(box, { archiveImage, containerId: undefined, state: "archived" });
      },
      (error: Error) => void Object.assign(box, { state: "error", errorReason: `archive failed: ${error.message}` }),
    );
  }

  /** The TTL: a ready box past its deadline archives. */
  private sweep(): void {
    const now = Date.now();
    for (const box of this.boxes.values()) if (box.state === "ready" && box.expiresAt < now) this.archive(box);
  }

  private async removeContainer(box: BoxRecord): Promise<void> {
    const id = box.containerId;
    box.containerId = undefined;
    box.commands.clear();
    if (id) await this.containers.remove(id);
  }

  /** The running box's container id (a 409 when it does not run). */
  private running(box: BoxRecord): string {
    if (box.state !== "ready" || !box.containerId) throw fail(409, "box_not_running", `box is ${box.state}`);
    return box.containerId;
  }

  // ---- commands and files --------------------------------------------------

  private async command(box: BoxRecord, body: Json): Promise<Json> {
    const containerId = this.running(box);
    if (typeof body.command !== "string" || body.command === "") {
      throw fail(400, "invalid_request", "command is required");
    }
    const options = { user: this.user, workingDir: typeof body.cwd === "string" && body.cwd ? body.cwd : "/" };
    if (body.detached === true) {
      const { exec, stream } = await this.containers.startCommand(containerId, ["sh", "-c", body.command], options);
      const record = new DetachedRecord();
      const tail = (kept: Buffer, chunk: Buffer) => Buffer.concat([kept, chunk]).subarray(-64 * 1024);
      demuxEngineStream(
        stream,
        (chunk) => (record.stdout = tail(record.stdout, chunk)),
        (chunk) => (record.stderr = tail(record.stderr, chunk)),
      );
      void untilEnded(stream)
        .then(() => exec.inspect())
        .then((info) => (record.exitCode = info.ExitCode ?? null))
        .catch(() => {})
        .finally(() => (record.status = "exited"));
      box.commands.set(record.id, record);
      this.detached.set(box.id, (this.detached.get(box.id) ?? 0) + 1);
      return { type: "box.command.detached", processId: record.id };
    }
    const seconds = Math.max(1, Math.min(600, Number(body.timeoutSeconds ?? 600)));
    const startedAt = Date.now();
    const argv = ["timeout", "-s", "KILL", String(seconds), "sh", "-c", body.command];
    const started = await this.containers.startCommand(containerId, argv, options);
    const cap = this.options.syncOutputCap ?? SYNC_OUTPUT_CAP;
    const { exitCode, stdout, stderr, sizes } = await collectCapped(started, cap);
    const timedOut = exitCode === 137 && Date.now() - startedAt >= seconds * 1000;
    return {
      type: "box.command.result",
      exitCode: timedOut ? null : exitCode,
      stdout: stdout.toString("utf8"),
      stderr: stderr.toString("utf8"),
      stdoutTruncated: sizes.stdout > cap,
      stderrTruncated: sizes.stderr > cap,
      timedOut,
      success: exitCode === 0,
    };
  }

  private async writeFile(box: BoxRecord, body: Json): Promise<Json> {
    const containerId = this.running(box);
    if (typeof body.path !== "string" || !body.path.startsWith("/") || typeof body.content !== "string") {
      throw fail(400, "invalid_request", "path (absolute) and content are required");
    }
    const input = Buffer.from(body.content, body.encoding === "base64" ? "base64" : "utf8");
    const argv = ["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "write", body.path];
    const { exitCode } = await this.containers.run(containerId, argv, { user: this.user, input });
    if (exitCode !== 0) throw fail(400, "write_failed", `could not write the file (exit ${exitCode})`);
    return { type: "box.file.written", path: body.path, size: input.length };
  }

  private async readFile(box: BoxRecord, url: URL): Promise<Json> {
    const containerId = this.running(box);
    const path = url.searchParams.get("path");
    if (!path?.startsWith("/")) throw fail(400, "invalid_request", "path (absolute) is required");
    const { exitCode, stdout } = await this.containers.run(containerId, ["cat", "--", path], { user: this.user });
    if (exitCode !== 0) throw fail(404, "file_not_found", "no such file");
    const encoding = url.searchParams.get("encoding") === "utf8" ? "utf8" : "base64";
    return { type: "box.file", path, encoding, content: stdout.toString(encoding) };
  }

  // ---- private routes ------------------------------------------------------

  /** The box container's address for a route path, or why there is none; the token is checked. */
  private routeTarget(req: IncomingMessage): { host: string; port: number; path: string } | HttpAnswer {
    const url = new URL(req.url ?? "/", "http://route");
    const match = /^\/(box_[0-9a-f]+)-(\d+)(\/.*)?$/.exec(url.pathname);
    const box = match ? this.boxes.get(match[1] as string) : undefined;
    if (!match || !box) return new HttpAnswer(404, "no such route");
    const port = Number(match[2]);
    const token = url.searchParams.get("_token") ?? "";
    const expected = routeToken(box.routeKey, box.id, port);
    if (token.length !== expected.length || !timingSafeEqual(Buffer.from(token), Buffer.from(expected))) {
      this.refusedRoutes.push(url.pathname);
      return new HttpAnswer(401, "this route is private: its token is missing or wrong");
    }
    if (box.state !== "ready" || !box.containerId) return new HttpAnswer(502, "box is not running");
    if (!box.ip) return new HttpAnswer(502, "box has no address");
    url.searchParams.delete("_token");
    this.routed.push(url.pathname);
    return { host: box.ip, port, path: `${match[3] ?? "/"}${url.search}` };
  }

  private handleRoute(req: IncomingMessage, res: ServerResponse): void {
    const target = this.routeTarget(req);
    if (!(target instanceof HttpAnswer)) proxyHttp(req, res, target);
    else res.writeHead(target.status, { "content-type": "text/plain" }).end(target.message);
  }

  private handleRouteUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const target = this.routeTarget(req);
    if (target instanceof HttpAnswer) refuseUpgrade(socket, target.status);
    else proxyUpgrade(req, socket, head, target, this.servers.sockets);
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
