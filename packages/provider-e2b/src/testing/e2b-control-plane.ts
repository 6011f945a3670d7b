import { randomBytes } from "node:crypto";
import { type ComputerContainers, forwardPort, HttpAnswer } from "@agent-computer/testing/emulator";
import { sandboxEgressOf } from "./e2b-network-fence.js";
import { CLIENT_ID, EMULATED_ENVD_VERSION, type EmulatedSandbox, startSandboxMachine } from "./e2b-sandbox.js";
import { shortSandboxId } from "./e2b-schemas.js";

// The sandbox lifecycle of E2B's API (e2b-dev/infra packages/api/internal/
// handlers/ and orchestrator/): create, connect (resuming a paused sandbox),
// pause, kill, get, list and set-timeout, with the timeout an absolute end
// the evictor acts on.

type Json = Record<string, unknown>;
export type Answer = [status: number, body?: unknown, headers?: Record<string, string>];

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

export interface ControlPlaneHost {
  containers: ComputerContainers;
  sandboxes: Map<string, EmulatedSandbox>;
  templates: Record<string, string>;
  templateBuilds: Map<string, EmulatedTemplateBuild>;
  ports: number[];
  /** The team's MaxLengthHours (infra packages/db migrations: tiers.max_length_hours). */
  maxLengthHours: number;
  /** Removes a sandbox's machine, its port listeners and the envd streams the edge held. */
  removeSandbox(sandbox: EmulatedSandbox): Promise<void>;
  /** Cuts the envd streams of a sandbox the edge no longer routes. */
  cutStreams(sandbox: EmulatedSandbox): void;
  /** How long a pause's memory snapshot takes before the sandbox is paused (default 0). */
  pauseMs?: number;
  /** Names every sandbox resolves, standing in for public DNS (the emulator's `publicHosts`). */
  extraHosts: string[];
  /** Puts a sandbox's egress in force outside its reach (e2b-network-fence.ts); gives the fence's container. */
  fence(sandbox: EmulatedSandbox): Promise<void>;
}

/** v2 create and connect default (e2b 2.51.0 index.d.ts NewSandboxV2, ConnectSandboxV2): 300 s. */
const V2_DEFAULT_TIMEOUT_S = 300;
/** v1 create default (openapi.yml NewSandbox; api/internal/sandbox/sandboxtypes/states.go SandboxTimeoutDefault): 15 s. */
const V1_DEFAULT_TIMEOUT_S = 15;

const fail = (status: number, message: string) => new HttpAnswer(status, { code: status, message });
/** api/internal/utils/messages.go SandboxNotFoundMsg. */
const notFound = (id: string) =>
  fail(404, `Sandbox ${JSON.stringify(id)} doesn't exist or you don't have access to it`);

export class ControlPlane {
  /** Pauses under way (the sweep's or a request's): a connect waits for them (sandbox_connect.go). */
  private readonly transitions = new Map<string, Promise<void>>();

  constructor(private readonly host: ControlPlaneHost) {}

  /** The sandbox a path names: its id, a `-<clientID>` suffix taken off (utils/split.go ShortID). */
  sandboxOf(raw: string): EmulatedSandbox {
    const id = shortSandboxId(decodeURIComponent(raw));
    if (!id) throw fail(400, "Invalid sandbox ID");
    const sandbox = this.host.sandboxes.get(id);
    if (!sandbox) throw notFound(id);
    return sandbox;
  }

  /** POST /v2/sandboxes and POST /sandboxes (handlers/sandbox_create.go PostSandboxes). */
  async create(body: Json, v2: boolean): Promise<Answer> {
    const templateId = String(body.templateID ?? "");
    const image = this.host.templates[templateId];
    if (!image) throw fail(404, `template '${templateId}' not found`);
    const seconds = this.validTimeout(body.timeout, v2 ? V2_DEFAULT_TIMEOUT_S : V1_DEFAULT_TIMEOUT_S, true);
    const autoPause = body.autoPause === true;
    const filesystemOnly = body.autoPauseMemory === false;
    if (filesystemOnly && !autoPause) throw fail(400, "autoPauseMemory=false only applies when autoPause is true.");
    if (filesystemOnly && (body.autoResume as Json | undefined)?.enabled === true)
      throw fail(400, "autoPauseMemory=false (filesystem-only auto-pause) cannot be combined with autoResume.");
    // v2 is always secured; v1 only with `secure: true` (sandbox_create.go: the envd token).
    const secure = v2 || body.secure === true;
    // Checked before the sandbox exists (sandbox_create.go validateNetworkConfig).
    const egress = sandboxEgressOf(body);
    // handlers/sandbox_create.go: "i" and 20 characters of [a-z0-9] (shared/pkg/id).
    const id = `i${randomBytes(10).toString("hex")}`;
    const machine = await startSandboxMachine(this.host.containers, {
      id,
      image,
      templateId,
      extraHosts: this.host.extraHosts,
    });
    const startedAt = new Date();
    const sandbox: EmulatedSandbox = {
      id,
      templateId,
      containerId: machine.containerId,
      ip: machine.ip,
      metadata: (body.metadata ?? {}) as Record<string, string>,
      envVars: (body.envVars ?? {}) as Record<string, string>,
      envdAccessToken: secure ? randomBytes(24).toString("hex") : undefined,
      state: "running",
      // create_instance.go: startTime once the VM runs, endTime = startTime + timeout.
      startedAt,
      endAt: new Date(startedAt.valueOf() + seconds * 1000),
      timeouts: [typeof body.timeout === "number" ? body.timeout : undefined],
      autoPause,
      autoResume: (body.autoResume as Json | undefined)?.enabled === true,
      users: machine.users,
      processes: new Map(),
      ended: new Map(),
      streams: new Set(),
      portListeners: new Map(),
      ...(egress ? { egress } : {}),
    };
    if (egress) {
      // Before the sandbox is handed out: nothing the user runs ever sees the network unfenced.
      try {
        await this.host.fence(sandbox);
      } catch (error) {
        await this.host.removeSandbox(sandbox).catch(() => {});
        throw error;
      }
    }
    this.host.sandboxes.set(id, sandbox);
    const running = () => this.host.sandboxes.get(id)?.state === "running";
    for (const port of this.host.ports)
      sandbox.portListeners.set(port, await forwardPort({ host: machine.ip, port }, running));
    return [201, this.sandboxBody(sandbox)];
  }

  /**
   * POST /v2/sandboxes/{id}/connect and POST /sandboxes/{id}/connect
   * (handlers/sandbox_connect.go): a running sandbox's end only moves later
   * (KeepAliveFor, allowShorter false) and it answers 200; a paused one
   * resumes through the create path (a new start and end) and answers 201.
   */
  async connect(raw: string, body: Json | undefined, v2: boolean): Promise<Answer> {
    if (!v2 && typeof body?.timeout !== "number") throw fail(400, "Error when parsing request: timeout is required");
    const seconds = this.validTimeout(body?.timeout, V2_DEFAULT_TIMEOUT_S, v2);
    let sandbox = this.sandboxOf(raw);
    await this.transitions.get(sandbox.id);
    sandbox = this.sandboxOf(raw);
    sandbox.timeouts.push(body?.timeout as number | undefined);
    if (sandbox.state === "running") {
      this.keepAlive(sandbox, seconds, false);
      return [200, this.sandboxBody(sandbox)];
    }
    await this.host.containers.unpause(sandbox.containerId);
    const now = new Date();
    Object.assign(sandbox, { state: "running", startedAt: now, endAt: new Date(now.valueOf() + seconds * 1000) });
    sandbox.pausedAt = undefined;
    return [201, this.sandboxBody(sandbox)];
  }

  /** POST /sandboxes/{id}/pause (handlers/sandbox_pause.go): synchronous; a paused sandbox is 409. */
  async pause(raw: string): Promise<Answer> {
    const sandbox = this.sandboxOf(raw);
    const under = this.transitions.get(sandbox.id);
    // storage/redis/state_change.go: a second pause joins the one under way.
    if (under) return await under.then(() => [204] as Answer);
    if (sandbox.state === "paused")
      throw fail(409, `Error pausing sandbox - sandbox '${sandbox.id}' is already paused`);
    await this.pauseNow(sandbox);
    return [204];
  }

  /** DELETE /sandboxes/{id} (handlers/sandbox_kill.go): kills a running one, deletes a paused one's snapshot. */
  async kill(raw: string): Promise<Answer> {
    const sandbox = this.sandboxOf(raw);
    this.host.sandboxes.delete(sandbox.id);
    await this.host.removeSandbox(sandbox);
    return [204];
  }

  /** GET /sandboxes/{id} (handlers/sandbox_get.go). */
  get(raw: string): Answer {
    const sandbox = this.sandboxOf(raw);
    return [200, this.detailBody(sandbox)];
  }

  /**
   * POST /sandboxes/{id}/timeout (handlers/sandbox_timeout.go): KeepAliveFor
   * with allowShorter, so the end is set from now, earlier or later; a
   * negative timeout is 0; a sandbox not running is 404 (paused: not in the
   * live store) or 409 (pausing).
   */
  setTimeout(raw: string, body: Json): Answer {
    const sandbox = this.sandboxOf(raw);
    if (this.transitions.has(sandbox.id)) throw fail(409, `Sandbox ${JSON.stringify(sandbox.id)} is being paused`);
    if (sandbox.state !== "running") throw notFound(sandbox.id);
    sandbox.timeouts.push(body.timeout as number | undefined);
    this.keepAlive(sandbox, Math.max(0, Number(body.timeout ?? 0)), true);
    return [204];
  }

  /**
   * GET /v2/sandboxes (handlers/sandboxes_list.go, utils/sandboxes_list.go,
   * utils/pagination.go): running and paused by default, every metadata pair
   * matching, newest first (ties by id), `limit` at most 100, a cursor of the
   * page's last entry, X-Total-Running when running ones were asked for.
   */
  list(query: URLSearchParams): Answer {
    const states = (query.get("state") ?? "running,paused").split(",");
    const order = query.get("order") ?? "desc";
    if (order !== "asc" && order !== "desc") throw fail(400, `Invalid order: ${order}`);
    const wanted = parseMetadataFilter(query.get("metadata"));
    if (!wanted) throw fail(400, "Error parsing metadata");
    const after = query.get("startedAfter");
    const template = query.get("template");
    let matching = [...this.host.sandboxes.values()].filter(
      (s) =>
        states.includes(this.shownState(s)) &&
        wanted.every(([k, v]) => s.metadata[k] === v) &&
        (after === null || s.startedAt >= new Date(after)) &&
        (template === null || s.templateId === template),
    );
    const totalRunning = matching.filter((s) => this.shownState(s) === "running").length;
    const sign = order === "asc" ? 1 : -1;
    matching.sort((a, b) => sign * (a.startedAt.valueOf() - b.startedAt.valueOf()) || a.id.localeCompare(b.id));
    const token = query.get("nextToken");
    if (token) {
      const cursor = parseCursor(token);
      if (!cursor) throw fail(400, "Invalid next token");
      matching = matching.filter((s) => {
        const t = s.startedAt.valueOf();
        return sign * (t - cursor.time) > 0 || (t === cursor.time && s.id > cursor.id);
      });
    }
    const limit = Math.min(Math.max(Number(query.get("limit") ?? 100), 1), 100);
    const page = matching.slice(0, limit);
    const headers: Record<string, string> = states.includes("running")
      ? { "x-total-running": String(totalRunning) }
      : {};
    const last = page.at(-1);
    if (matching.length > limit && last) headers["x-next-token"] = cursorOf(last, order === "asc");
    return [200, page.map((s) => this.listedBody(s)), headers];
  }

  /** The evictor (orchestrator/evictor/evict.go): a running sandbox past its end pauses (autoPause) or is killed. */
  async sweep(): Promise<void> {
    const now = Date.now();
    for (const sandbox of this.host.sandboxes.values()) {
      if (sandbox.state !== "running" || sandbox.endAt.valueOf() > now || this.transitions.has(sandbox.id)) continue;
      if (sandbox.autoPause) await this.pauseNow(sandbox).catch(() => {});
      else {
        this.host.sandboxes.delete(sandbox.id);
        await this.host.removeSandbox(sandbox).catch(() => {});
      }
    }
  }

  // ------------------------------------------------------------ template builds

  requestBuild(body: Json): Answer {
    const build: EmulatedTemplateBuild = {
      templateId: `t${randomBytes(8).toString("hex")}`,
      buildId: randomBytes(8).toString("hex"),
      name: String(body.name ?? ""),
      cpuCount: body.cpuCount as number | undefined,
      memoryMB: body.memoryMB as number | undefined,
      status: "waiting",
      polls: 0,
    };
    this.host.templateBuilds.set(build.buildId, build);
    const { templateId: templateID, buildId: buildID, name } = build;
    return [202, { templateID, buildID, public: false, names: [name], aliases: [name], tags: [] }];
  }

  /** Starts a build from the trigger's image. */
  triggerBuild(templateId: string, buildId: string, body: Json): Answer {
    const build = this.host.templateBuilds.get(buildId);
    if (!build || build.templateId !== templateId) throw fail(404, "build not found");
    build.fromImage = body.fromImage as string | undefined;
    build.status = "building";
    return [202];
  }

  /** One poll while building (with a log line), then ready: the template then starts sandboxes of its image. */
  pollBuild(buildId: string): Answer {
    const build = this.host.templateBuilds.get(buildId);
    if (!build) throw fail(404, "build not found");
    build.polls++;
    const logEntries =
      build.polls === 1
        ? [{ timestamp: new Date().toISOString(), level: "info", message: `Pulling ${build.fromImage}` }]
        : [];
    if (build.polls >= 2 && build.status === "building") {
      build.status = build.fromImage ? "ready" : "error";
      if (build.fromImage) {
        this.host.templates[build.name] = build.fromImage;
        this.host.templates[build.templateId] = build.fromImage;
      }
    }
    const reason = build.status === "error" ? { reason: { message: "no image to build from" } } : {};
    const { templateId: templateID, buildId: buildID, status } = build;
    return [200, { templateID, buildID, status, logEntries, logs: logEntries.map((e) => e.message), ...reason }];
  }

  // ---------------------------------------------------------------- helpers

  private async pauseNow(sandbox: EmulatedSandbox): Promise<void> {
    const pausing = (async () => {
      // The edge stops routing first (orchestrator/delete_instance.go), so envd's streams are cut.
      this.host.cutStreams(sandbox);
      // The pause request blocks while memory is snapshotted (about 4 s per GB, notes §3); the state comes after.
      if (this.host.pauseMs) await new Promise((resolve) => setTimeout(resolve, this.host.pauseMs));
      await this.host.containers.pause(sandbox.containerId);
      sandbox.state = "paused";
      sandbox.pausedAt = new Date();
    })();
    this.transitions.set(sandbox.id, pausing);
    try {
      await pausing;
    } finally {
      this.transitions.delete(sandbox.id);
    }
  }

  /**
   * orchestrator/keep_alive.go KeepAliveFor: the new end is now + the
   * timeout, capped at the sandbox's MaxInstanceLength from its start; older
   * than that is 400; without allowShorter an earlier end changes nothing.
   */
  private keepAlive(sandbox: EmulatedSandbox, seconds: number, allowShorter: boolean): void {
    const now = Date.now();
    const maxMs = this.host.maxLengthHours * 3_600_000;
    const age = now - sandbox.startedAt.valueOf();
    if (age > maxMs) throw fail(400, "Max instance length exceeded");
    const end = new Date(now + Math.max(0, Math.min(seconds * 1000, maxMs - age)));
    if (allowShorter || end > sandbox.endAt) sandbox.endAt = end;
  }

  /** handlers/timeout_helper.go validateAndParseTimeout; v2 connect the same (sandbox_connect.go, [RUNTIME]). */
  private validTimeout(raw: unknown, fallback: number, positive: boolean): number {
    if (raw === undefined || raw === null) return fallback;
    const seconds = Number(raw);
    if (positive && !(seconds > 0)) throw fail(400, "Timeout must be greater than 0");
    if (seconds > this.host.maxLengthHours * 3600)
      throw fail(400, `Timeout cannot be greater than ${this.host.maxLengthHours} hours`);
    return Math.max(0, seconds);
  }

  /** GET and list say `paused` while a pause is under way (sandbox_get.go, sandboxes_list.go). */
  private shownState(sandbox: EmulatedSandbox): "running" | "paused" {
    return this.transitions.has(sandbox.id) ? "paused" : sandbox.state;
  }

  private sandboxBody(sandbox: EmulatedSandbox) {
    return {
      templateID: sandbox.templateId,
      sandboxID: sandbox.id,
      clientID: CLIENT_ID,
      envdVersion: EMULATED_ENVD_VERSION,
      ...(sandbox.envdAccessToken ? { envdAccessToken: sandbox.envdAccessToken } : {}),
      trafficAccessToken: null,
      domain: null,
    };
  }

  private listedBody(sandbox: EmulatedSandbox) {
    const state = this.shownState(sandbox);
    return {
      templateID: sandbox.templateId,
      sandboxID: sandbox.id,
      clientID: CLIENT_ID,
      startedAt: sandbox.startedAt.toISOString(),
      // A paused sandbox's end is its pause time (sandbox_get.go, sandboxes_list.go).
      endAt: (state === "paused" ? (sandbox.pausedAt ?? new Date()) : sandbox.endAt).toISOString(),
      // The emulator's templates: the computer template's size, and a disk it does not measure.
      cpuCount: 2,
      memoryMB: 4096,
      diskSizeMB: 10240,
      metadata: sandbox.metadata,
      state,
      envdVersion: EMULATED_ENVD_VERSION,
    };
  }

  private detailBody(sandbox: EmulatedSandbox) {
    return {
      ...this.listedBody(sandbox),
      ...(sandbox.envdAccessToken ? { envdAccessToken: sandbox.envdAccessToken } : {}),
      domain: null,
      // sandbox_get.go: onTimeout is pause exactly when autoPause.
      lifecycle: { autoResume: sandbox.autoResume, onTimeout: sandbox.autoPause ? "pause" : "kill" },
    };
  }
}

/** utils/sandboxes_list.go: "k=v&k2=v2", the whole string and then each key and value unescaped. */
function parseMetadataFilter(raw: string | null): [string, string][] | undefined {
  if (!raw) return [];
  try {
    const pairs: [string, string][] = [];
    for (const pair of queryUnescape(raw).split("&")) {
      const parts = pair.split("=");
      if (parts.length !== 2) return undefined;
      pairs.push([queryUnescape(parts[0] as string), queryUnescape(parts[1] as string)]);
    }
    return pairs;
  } catch {
    return undefined;
  }
}

/** Go's url.QueryUnescape: `+` is a space, then %-escapes. */
function queryUnescape(text: string): string {
  return decodeURIComponent(text.replace(/\+/g, " "));
}

/** utils/pagination.go generateCursor: base64 (URL alphabet, padded) of "<RFC3339Nano start>__<id>" (+"__asc"). */
function cursorOf(sandbox: EmulatedSandbox, asc: boolean): string {
  const text = `${sandbox.startedAt.toISOString()}__${sandbox.id}${asc ? "__asc" : ""}`;
  return Buffer.from(text).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
}

function parseCursor(token: string): { time: number; id: string } | undefined {
  const [time, id] = Buffer.from(token, "base64url").toString("utf8").split("__");
  const at = Date.parse(time ?? "");
  return Number.isFinite(at) && id ? { time: at, id } : undefined;
}
