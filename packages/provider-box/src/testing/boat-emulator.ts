import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import {
  ComputerContainers,
  type FaultRule,
  FaultRules,
  HttpAnswer,
  LoopbackServers,
  proxyHttp,
  proxyUpgrade,
  readJson,
  refuseUpgrade,
  ServiceRecorder,
  sendJson,
} from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { SandboxCommands, SYNC_OUTPUT_CAP } from "./boat-commands.js";
import { BOAT_OPERATIONS } from "./boat-definition.js";
import { legacyAnswer, legacyRequest } from "./boat-legacy.js";
import { NamedSnapshots } from "./boat-named-snapshots.js";
import { fail, SandboxMachines, SandboxRecord, untilRunning } from "./boat-sandboxes.js";

/** Every container and image an emulator makes carries this label (its value: the emulator's id). */
export const BOAT_EMULATOR_LABEL = "agent-computer.test/boat-emulator";

/** A fault: the next `times` calls that match (a Boat path: `/sandboxes/<id>/commands`, ...) get `status` (and `code`). */
export type BoatFaultRule = Omit<FaultRule, "retryAfter">;

export interface BoatEmulatorOptions {
  docker: Docker;
  /** The only key the API takes (`Authorization: Bearer <key>`). */
  apiKey: string;
  /** The image of a sandbox created without `from` (the computer image in tests). */
  baseImage: string;
  /** Named snapshots the account already has, and the images they stand for. */
  snapshots?: Record<string, string>;
  /** The account's environment, put into every sandbox created or resumed without `noEnv: true`. */
  accountEnv?: Record<string, string>;
  /** How often auto-stops are checked (default 250 ms). */
  sweepMs?: number;
  /** Where a sync command's stdout and stderr are each cut (default SYNC_OUTPUT_CAP). */
  syncOutputCap?: number;
}

type Json = Record<string, unknown>;
/** An answer: its status and body (the envelope's `ok: true` is added on the way out). */
type Answer = [number, Json];

/** How long op:command waits for a starting sandbox before 409 `boat_starting` (boat-v1.yaml op:command: 60 s). */
const STARTING_WAIT_MS = 60_000;

/**
 * A loopback Boat service for tests (docs/architecture.md §12), held to
 * boat-v1.yaml: every request and answer goes through a ServiceRecorder
 * of the definition's operations (boat-definition.ts), so a client that
 * leaves the definition shows up as a recorded violation. It serves
 * Boat's base (`/api/v1`, `/sandboxes`) and the legacy Box base
 * (`/api/box/v1`, `/boxes`, answers under `box`), and a route server for
 * the sandboxes' hosted ports that checks each route's `_token` and
 * forwards HTTP and websocket upgrades to the sandbox's port (the
 * service's routes are hosts, `<subdomain>-<port>.on.boat.dev`; these are
 * paths, `/<id>-<port>/`, on loopback).
 *
 * Each sandbox is a real container of the image on the given engine;
 * archive (stop, or an auto-stop come due) commits it to an image and
 * removes it; resume recreates it under the same id. Faults: `inject`,
 * `deleteBehindTheProvider`, `breakSandbox`.
 */
export class BoatEmulator {
  private readonly containers: ComputerContainers;
  readonly id: string;
  /** Every exchange, checked against boat-v1.yaml; a test asserts `recorder.assertNoViolations()`. */
  readonly recorder = new ServiceRecorder("Boat", BOAT_OPERATIONS);
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly idempotency = new Map<string, { id: string; body: string }>();
  private readonly deletions = new Map<string, Json>();
  /** Sandboxes deleted (through the API or behind the provider's back): they answer 404. */
  private readonly gone = new Set<string>();
  private readonly machines: SandboxMachines;
  private readonly commands: SandboxCommands;
  private readonly named: NamedSnapshots;
  private readonly faults = new FaultRules<BoatFaultRule>();
  private readonly servers = new LoopbackServers();
  private readonly api = this.servers.serve((req, res) => void this.handleApi(req, res));
  private readonly routes = this.servers.serve(
    (req, res) => this.handleRoute(req, res),
    (req, socket, head) => this.handleRouteUpgrade(req, socket, head),
  );
  private sweeper: ReturnType<typeof setInterval> | undefined;
  /** Every request answered, as `METHOD path` on Boat's paths (no query: tokens never land here). */
  readonly requests: string[] = [];
  /** How many requests came on each base: Boat's (`/api/v1`) and the legacy Box one (`/api/box/v1`). */
  readonly requestsOnBase = { boat: 0, box: 0 };
  /** Every refusal, as `STATUS METHOD path`. */
  readonly refusals: string[] = [];
  /** Route requests refused for a missing or wrong token (paths only). */
  readonly refusedRoutes: string[] = [];
  /** Route requests let through to a sandbox's port (paths only). */
  readonly routed: string[] = [];
  /** Every create and resume body's `noEnv`. */
  readonly noEnvSeen: boolean[] = [];
  /** Every create's `from` (null without one). */
  readonly froms: (string | null)[] = [];

  constructor(private readonly options: BoatEmulatorOptions) {
    this.containers = new ComputerContainers(options.docker, BOAT_EMULATOR_LABEL);
    this.id = this.containers.instance;
    this.machines = new SandboxMachines(this.containers, options.accountEnv);
    this.commands = new SandboxCommands(this.containers, options.syncOutputCap ?? SYNC_OUTPUT_CAP);
    this.named = new NamedSnapshots(this.containers, options.snapshots ?? {});
  }

  /** Boat's base: the `baseUrl` to give the provider. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.api.port}/api/v1`;
  }

  /** The legacy Box base (`/boxes` paths). */
  get legacyBaseUrl(): string {
    return `http://127.0.0.1:${this.api.port}/api/box/v1`;
  }

  async start(): Promise<void> {
    await this.servers.listen();
    this.sweeper = setInterval(() => this.sweep(), this.options.sweepMs ?? 250);
  }

  /** Removes every container and archive image it made, then stops listening. */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.sandboxes.values()].map((s) => s.transition.catch(() => {})));
    await this.named.settled();
    await this.containers.removeAll();
    await this.servers.close();
  }

  inject(rule: BoatFaultRule): void {
    this.faults.inject(rule);
  }

  /** Drops every fault not yet answered. */
  clearFaults(): void {
    this.faults.clear();
  }

  get pendingFaults(): number {
    return this.faults.pending;
  }

  /** The sandbox's state; "deleted" once it is gone (the service then answers 404). */
  stateOf(id: string): string | undefined {
    return this.sandboxes.get(id)?.state ?? (this.gone.has(id) ? "deleted" : undefined);
  }

  containerOf(id: string): string | undefined {
    return this.sandboxes.get(id)?.containerId;
  }

  /** When the sandbox's auto-stop comes due (ms since the epoch; null: never). */
  archiveAfterOf(id: string): number | null | undefined {
    return this.sandboxes.get(id)?.archiveAfter;
  }

  /** A named snapshot's status and the sandbox it was saved from. */
  namedSnapshot(name: string): { status: string; sourceSandboxId: string } | undefined {
    return this.named.get(name);
  }

  /** Whether a sandbox was created with `noEnv: true` (the last create or resume). */
  noEnvOf(id: string): boolean | undefined {
    return this.sandboxes.get(id)?.noEnv;
  }

  /** Detached commands started in a sandbox. */
  detachedIn(id: string): number {
    return this.commands.detached.get(id) ?? 0;
  }

  /** The sandbox's name as the service keeps it. */
  nameOf(id: string): string | undefined {
    return this.sandboxes.get(id)?.name;
  }

  /** Sandboxes someone else made (archived, with the service's own names): an account with more than the provider's. */
  addSandboxes(count: number): string[] {
    return Array.from({ length: count }, () => {
      const sandbox = new SandboxRecord(3600, false, null);
      sandbox.state = "archived";
      this.sandboxes.set(sandbox.id, sandbox);
      return sandbox.id;
    });
  }

  /** Someone deletes the sandbox at the service: it answers 404 from now on. */
  async deleteBehindTheProvider(id: string): Promise<void> {
    const sandbox = this.known(id);
    this.sandboxes.delete(id);
    this.gone.add(id);
    await this.machines.remove(sandbox, true);
  }

  /** The sandbox breaks in a way resume cannot repair: state `error`, resume refused. */
  async breakSandbox(id: string, reason = "unrecoverable"): Promise<void> {
    const sandbox = this.known(id);
    await this.machines.remove(sandbox, true);
    Object.assign(sandbox, { state: "error", error: reason });
  }

  private known(id: string): SandboxRecord {
    const sandbox = this.sandboxes.get(id);
    if (!sandbox) throw new Error(`the emulator has no sandbox ${id}`);
    return sandbox;
  }

  // ---- the API -------------------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://boat");
    const method = req.method ?? "GET";
    const legacy = url.pathname.startsWith("/api/box/v1/");
    const path = legacyRequest.path(url.pathname.replace(/^\/api(\/box)?\/v1/, ""), legacy);
    this.requests.push(`${method} ${path}`);
    this.requestsOnBase[legacy ? "box" : "boat"] += 1;
    let body: unknown;
    try {
      body = method === "GET" || method === "DELETE" ? undefined : await readJson(req);
    } catch {
      body = Symbol.for("not json");
    }
    if (legacy) body = legacyRequest.body(body);
    const exchange = this.recorder.request(method, path, {
      query: url.searchParams,
      body: typeof body === "symbol" ? "not json" : body,
      headers: req.headers,
    });
    let status: number;
    let answer: Json;
    try {
      if (req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
        throw fail(401, "unauthorized", "missing or invalid API key");
      }
      if (typeof body === "symbol") throw fail(400, "invalid_json", "the body is not JSON");
      const fault = this.faults.take(method, path);
      // An injected fault is the service failing on purpose: its status is not held to the definition.
      const injected = (f: BoatFaultRule) => fail(f.status, f.code ?? "injected", f.message ?? "injected fault");
      if (fault && !fault.after) throw Object.assign(injected(fault), { injected: true });
      const [done, fields] = await this.route(method, path, url, (body ?? {}) as Json, req);
      if (fault?.after) throw Object.assign(injected(fault), { injected: true });
      [status, answer] = [done, { ok: true, ...fields }];
    } catch (error) {
      const refusal = error instanceof HttpAnswer ? error : fail(500, "internal", (error as Error)?.message ?? "error");
      const { code, message, details } = refusal.body as { code: string; message: string; details: Json };
      this.refusals.push(`${refusal.status} ${method} ${path}`);
      status = refusal.status;
      answer = {
        ok: false,
        type: "sandbox.error",
        status,
        code,
        message,
        error: { code, message, status, details: { error: code, message, ...details } },
        requestId: `req_${randomBytes(8).toString("hex")}`,
      };
      if ((error as { injected?: boolean }).injected) {
        sendJson(res, status, legacy ? legacyAnswer(answer) : answer);
        return;
      }
    }
    exchange.answer(status, answer);
    const headers: Record<string, string> =
      status === 409 && method === "DELETE" ? { "cache-control": "no-store" } : {};
    sendJson(res, status, legacy ? legacyAnswer(answer) : answer, headers);
  }

  private async route(method: string, path: string, url: URL, body: Json, req: IncomingMessage): Promise<Answer> {
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "named-snapshots") return this.named.route(method, parts[1], body, (id) => this.sandboxes.get(id));
    if (parts[0] === "deletion-operations" && parts.length === 2 && method === "GET") {
      const operation = this.deletions.get(parts[1] as string);
      if (!operation) throw fail(404, "not_found", "not_found");
      return [200, { type: "deletion.operation", operation }];
    }
    if (parts[0] !== "sandboxes") throw fail(404, "not_found", `no route ${method} ${path}`);
    if (parts.length === 1 && method === "POST") return this.create(body, req);
    if (parts.length === 1 && method === "GET") return [200, this.list(url.searchParams)];
    const sandbox = this.sandboxes.get(parts[1] as string);
    if (!sandbox) throw fail(404, "not_found", "not_found");
    const verb = parts[2];
    if (verb === undefined && method === "GET") return [200, { type: "sandbox.info", sandbox: sandbox.view }];
    if (verb === undefined && method === "PATCH") return [200, this.update(sandbox, body)];
    if (verb === undefined && method === "DELETE") return this.delete(sandbox, req);
    if (verb === "stop" && method === "POST") return this.stop(sandbox);
    if (verb === "resume" && method === "POST") return this.resume(sandbox, body);
    if (verb === "commands" && method === "POST") {
      await untilRunning(sandbox, STARTING_WAIT_MS);
      return [200, await this.commands.command(sandbox, sandbox.containerId as string, body)];
    }
    if (verb === "commands" && method === "GET" && parts[3]) {
      this.machines.running(sandbox, fail(409, "machine_not_running", "the sandbox's machine is not running"));
      return [200, this.commands.status(sandbox, Number(parts[3]), url.searchParams)];
    }
    const notRunning = (status: number) => fail(status, "machine_not_running", "the sandbox's machine is not running");
    if (verb === "files" && method === "PUT") {
      return [200, await this.commands.writeFile(this.machines.running(sandbox, notRunning(409)), body)];
    }
    if (verb === "files" && method === "GET") {
      return [200, await this.commands.readFile(this.machines.running(sandbox, notRunning(409)), url.searchParams)];
    }
    if (verb === "host" && method === "POST") return [200, this.host(sandbox, body, notRunning(400))];
    throw fail(404, "not_found", `no route ${method} ${path}`);
  }

  /** op:create: 202 with the sandbox provisioning; one sandbox per idempotency key and body. */
  private create(body: Json, req: IncomingMessage): Answer {
    const key = req.headers["idempotency-key"];
    const earlier = typeof key === "string" ? this.idempotency.get(key) : undefined;
    if (earlier && earlier.body !== JSON.stringify(body)) {
      throw fail(409, "idempotency_key_reused", "this Idempotency-Key was used with another body");
    }
    const again = earlier ? this.sandboxes.get(earlier.id) : undefined;
    if (again) {
      const status = again.state === "provisioning" ? "provisioning" : "ready";
      return [202, { type: "sandbox.created", status, ttlSeconds: again.ttlSeconds, sandbox: again.view }];
    }
    const from = typeof body.from === "string" ? body.from : null;
    const image = from === null ? this.options.baseImage : this.named.imageOf(from);
    // Observed: a create the service cannot serve as asked is a 400 (create.xlarge's machine_provider_required).
    if (!image) throw fail(400, "unknown_snapshot", `no named snapshot ${from}`);
    this.froms.push(from);
    this.noEnvSeen.push(body.noEnv === true);
    const ttl = body.ttlSeconds === undefined ? 3600 : (body.ttlSeconds as number | null);
    const sandbox = new SandboxRecord(ttl, body.noEnv === true, from);
    this.sandboxes.set(sandbox.id, sandbox);
    if (typeof key === "string") this.idempotency.set(key, { id: sandbox.id, body: JSON.stringify(body) });
    this.machines.provision(sandbox, image, "start");
    return [202, { type: "sandbox.created", status: "provisioning", ttlSeconds: ttl, sandbox: sandbox.view }];
  }

  /** op:sandboxes: oldest or newest first, `limit` per page, an opaque cursor (a bad one restarts at page one). */
  private list(query: URLSearchParams): Json {
    const limit = Number(query.get("limit") ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw fail(400, "invalid_limit", "limit must be 1..200");
    const states = query.get("state")?.split(",");
    const all = [...this.sandboxes.values()].filter((s) => !states || states.includes(s.state));
    if (query.get("sort") !== "asc") all.reverse();
    const offset =
      Number(
        Buffer.from(query.get("cursor") ?? "", "base64url")
          .toString("utf8")
          .replace(/^o:/, ""),
      ) || 0;
    const page = all.slice(offset, offset + limit);
    const hasMore = offset + limit < all.length;
    const nextCursor = hasMore ? Buffer.from(`o:${offset + limit}`).toString("base64url") : null;
    return { type: "sandbox.list", sandboxes: page.map((s) => s.view), pageInfo: { nextCursor, hasMore, limit } };
  }

  /** op:update: the name is cut at 120 characters; a new TTL counts from the last start. */
  private update(sandbox: SandboxRecord, body: Json): Json {
    if (typeof body.name === "string") sandbox.name = body.name.slice(0, 120);
    if (body.ttlSeconds !== undefined) sandbox.ttlSeconds = body.ttlSeconds as number | null;
    sandbox.touch();
    return { type: "sandbox.updated", sandbox: sandbox.view };
  }

  /** op:deleteSandbox: only with X-Ascii-Confirm-Delete naming it; gone from lists at once, removed in the background. */
  private delete(sandbox: SandboxRecord, req: IncomingMessage): Answer {
    if (req.headers["x-ascii-confirm-delete"] !== sandbox.id) {
      throw fail(409, "delete_confirmation_required", "Send X-Ascii-Confirm-Delete with the sandbox id to delete it.", {
        targetId: sandbox.id,
      });
    }
    this.sandboxes.delete(sandbox.id);
    const operation: Json = {
      id: `bdop_${randomBytes(16).toString("hex")}`,
      kind: "sandbox",
      targetId: sandbox.id,
      reason: "explicit",
      status: "processing",
      stage: "removing",
      expectedBy: null,
      attemptCount: 1,
      requestedAt: new Date().toISOString(),
      completedAt: null,
    };
    this.deletions.set(operation.id as string, operation);
    this.gone.add(sandbox.id);
    void this.machines.remove(sandbox, true).then(
      () =>
        Object.assign(operation, { status: "completed", stage: "completed", completedAt: new Date().toISOString() }),
      () => Object.assign(operation, { stage: "retrying" }),
    );
    return [202, { type: "sandbox.deleting", operation: { ...operation } }];
  }

  /** op:stop: 202 archiving; a sandbox already archived is refused (observed: 400 stop_failed). */
  private stop(sandbox: SandboxRecord): Answer {
    if (sandbox.state === "archived" || sandbox.state === "error") {
      throw fail(400, "stop_failed", `The sandbox is ${sandbox.state}.`, { sandbox: sandbox.view });
    }
    this.machines.archive(sandbox);
    return [202, { type: "sandbox.stopping", id: sandbox.id, status: "archiving", sandbox: sandbox.view }];
  }

  /** op:resume onto a fresh machine from the archive; `ttlSeconds` stored when given; `noEnv` one-way. */
  private async resume(sandbox: SandboxRecord, body: Json): Promise<Answer> {
    if (sandbox.state === "error")
      throw fail(409, "sandbox_not_resumable", `The sandbox cannot be resumed (${sandbox.error}).`);
    if (sandbox.state === "archiving") await sandbox.transition.catch(() => {});
    this.noEnvSeen.push(body.noEnv === true);
    if (sandbox.state === "archived") {
      sandbox.noEnv = sandbox.noEnv || body.noEnv === true;
      if (body.ttlSeconds !== undefined) sandbox.ttlSeconds = body.ttlSeconds as number | null;
      this.machines.provision(sandbox, sandbox.archiveImage as string, "resume");
    }
    return [202, { type: "sandbox.resuming", id: sandbox.id, status: "resuming", sandbox: sandbox.view }];
  }

  /** op:hostPort: one stable route per port; private unless `public`, its `_token` in the URL. */
  private host(sandbox: SandboxRecord, body: Json, notRunning: HttpAnswer): Json {
    this.machines.running(sandbox, notRunning);
    const port = body.port as number;
    const access = body.public === true ? "public" : "private";
    sandbox.hosted.set(port, access);
    const token = access === "private" ? `?_token=${routeToken(sandbox.routeKey, sandbox.id, port)}` : "";
    const url = `http://127.0.0.1:${this.routes.port}/${sandbox.id}-${port}/${token}`;
    return { type: "port.hosted", success: true, port, url, isProtected: access === "private", access };
  }

  /** The auto-stop: a running sandbox past its `archiveAfter` archives. */
  private sweep(): void {
    const now = Date.now();
    for (const sandbox of this.sandboxes.values()) {
      const due = sandbox.archiveAfter;
      if (sandbox.state === "ready" && due !== null && due < now) this.machines.archive(sandbox);
    }
  }

  // ---- hosted ports ----------------------------------------------------------

  /** The sandbox container's address for a route path, or why there is none; the token is checked. */
  private routeTarget(req: IncomingMessage): { host: string; port: number; path: string } | HttpAnswer {
    const url = new URL(req.url ?? "/", "http://route");
    const match = /^\/(bx_[0-9a-z]{8})-(\d+)(\/.*)?$/.exec(url.pathname);
    const sandbox = match ? this.sandboxes.get(match[1] as string) : undefined;
    const port = Number(match?.[2]);
    if (!match || !sandbox?.hosted.has(port)) return new HttpAnswer(404, "no such route");
    if (sandbox.hosted.get(port) === "private") {
      const token = url.searchParams.get("_token") ?? "";
      const expected = routeToken(sandbox.routeKey, sandbox.id, port);
      if (token.length !== expected.length || !timingSafeEqual(Buffer.from(token), Buffer.from(expected))) {
        this.refusedRoutes.push(url.pathname);
        return new HttpAnswer(401, "this route is private: its token is missing or wrong");
      }
    }
    if (sandbox.state !== "ready" || !sandbox.containerId || !sandbox.ip) return new HttpAnswer(502, "not running");
    url.searchParams.delete("_token");
    this.routed.push(url.pathname);
    return { host: sandbox.ip, port, path: `${match[3] ?? "/"}${url.search}` };
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

/** The token of a sandbox's private route of a port. */
function routeToken(key: string, sandboxId: string, port: number): string {
  return createHmac("sha256", key).update(`${sandboxId}:${port}`).digest("hex").slice(0, 40);
}
