import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { AgentComputerError, type Logger, parseInput, silentLogger } from "@agent-computer/core";
import type { Lease } from "@agent-computer/core/lease";
import { WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import type { ScreenAuthority } from "./authority/screen-authority.js";
import type { ScreenCheckRequest } from "./authority/screen-check-request.js";
import { CapabilitySeal } from "./capability/capability-seal.js";
import type { SealedCapability } from "./capability/sealed-capability.js";
import type { IssueScreenCapabilityRequest } from "./issue-screen-capability-request.js";
import type { IssueTerminalCapabilityRequest } from "./issue-terminal-capability-request.js";
import { type AuthorityVerdict, authorityVerdict } from "./proxy/authority-verdict.js";
import { refuseUpgrade } from "./proxy/refuse-upgrade.js";
import { type BridgeCloser, type BridgeFrame, ScreenBridge } from "./proxy/screen-bridge.js";
import { screenPathOf } from "./proxy/screen-path.js";
import type { ScreenCapability } from "./screen-capability.js";
import type { ScreenEvent } from "./screen-event.js";
import type { ScreenPolicy } from "./screen-policy.js";
import type { ScreenRevocation } from "./screen-revocation.js";
import type { Screens } from "./screens.js";
import type { ScreensOptions } from "./screens-options.js";
import { terminalPage } from "./terminal/terminal-page.js";
import { XtermFiles } from "./terminal/xterm-files.js";
import type { TerminalCapability } from "./terminal-capability.js";
import { NovncFiles } from "./viewer/novnc-files.js";
import { viewerPage } from "./viewer/viewer-page.js";

const MAX_TTL_MS = 24 * 60 * 60 * 1000;

const optionsSchema = z.object({
  authority: z.custom<ScreenAuthority>(
    (v) =>
      typeof v === "object" &&
      v !== null &&
      typeof (v as ScreenAuthority).open === "function" &&
      typeof (v as ScreenAuthority).check === "function",
    { message: "expected a ScreenAuthority (open and check)" },
  ),
  secret: z.custom<Uint8Array>((v) => v instanceof Uint8Array && v.length === 32, {
    message: "expected 32 bytes (a Uint8Array or Buffer)",
  }),
  logger: z.custom<Logger>((v) => typeof v === "object" && v !== null).optional(),
  onEvent: z.custom<(event: ScreenEvent) => void>((v) => typeof v === "function").optional(),
  publicPath: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)+$/, "expected a path like /screens: no trailing slash, no encoded characters")
    .refine((v) => !v.split("/").includes(".."), "expected no .. segment")
    .optional(),
  maxClientFrameBytes: z.number().int().min(1024).optional(),
  maxBufferedBytes: z.number().int().min(1024).optional(),
  controlCheckIntervalMs: z.number().int().min(50).optional(),
  controlUnavailableGraceMs: z.number().int().nonnegative().optional(),
  authorityTimeoutMs: z.number().int().positive().optional(),
  upstreamHandshakeTimeoutMs: z.number().int().positive().optional(),
  viewerFrameAncestors: z
    .string()
    .regex(/^[^;,\r\n]+$/, "expected CSP sources without ; or ,")
    .optional(),
  clock: z.custom<() => number>((v) => typeof v === "function").optional(),
});

const leaseShape = z.custom<Lease>(
  (v) =>
    typeof v === "object" &&
    v !== null &&
    typeof (v as Lease).kind === "string" &&
    typeof (v as Lease).key === "string" &&
    typeof (v as Lease).holder === "string" &&
    typeof (v as Lease).token === "number",
  { message: "expected a Lease (from runtime.takeover)" },
);

/** Refuses unless `control` is the user-control lease of this computer and bot. */
function requireControlLease(
  v: { computerId: string; botId: string; control?: Lease | undefined },
  ctx: z.RefinementCtx,
  missing: string,
): void {
  if (v.control === undefined) ctx.addIssue({ code: "custom", path: ["control"], message: missing });
  else if (v.control.kind !== "user-control")
    ctx.addIssue({ code: "custom", path: ["control", "kind"], message: 'expected a "user-control" lease' });
  else if (v.control.computerId !== v.computerId || v.control.botId !== v.botId)
    ctx.addIssue({
      code: "custom",
      path: ["control"],
      message: "expected the user-control lease of this computer and bot",
    });
}

const issueBase = {
  computerId: z.string().min(1),
  botId: z.string().min(1),
  ttlMs: z.number().int().min(1000).max(MAX_TTL_MS),
  control: leaseShape.optional(),
};

const issueSchema = z
  .object({ ...issueBase, mode: z.enum(["view", "control"]) })
  .strict()
  .superRefine((v, ctx) => {
    if (v.mode === "view" && v.control !== undefined)
      ctx.addIssue({ code: "custom", path: ["control"], message: "a view capability takes no control lease" });
    if (v.mode === "control") requireControlLease(v, ctx, "control needs the user-control lease");
  });

const issueTerminalSchema = z
  .object(issueBase)
  .strict()
  .superRefine((v, ctx) =>
    requireControlLease(v, ctx, "a terminal needs the user-control lease (there is no view terminal)"),
  );

/** A grant of `open` (a screen endpoint, with its mode) or `openTerminal` (no mode). */
const grantSchema = z.object({
  endpoint: z.object({
    mode: z.enum(["view", "control"]).optional(),
    id: z.string().min(1),
    url: z.string().regex(/^wss?:\/\//i, "expected a ws: or wss: URL"),
    token: z.string().min(1),
    expiresAt: z.number().nonnegative(),
  }),
  revoke: z.custom<() => Promise<void>>((v) => typeof v === "function", { message: "expected a function" }),
});
type Grant = z.infer<typeof grantSchema>;

/** What this process remembers of a capability it issued. */
interface Issued {
  readonly policy: ScreenPolicy;
  readonly expiresAt: number;
  readonly revoke: () => Promise<void>;
  /** The gateway endpoint's id: a terminal issued later lives under a control screen's. */
  readonly endpointId: string;
  /** For a terminal: the control screen capability it lives under. */
  readonly screen: string | undefined;
  control: Lease | undefined;
}

const REFUSAL_STATUS: Record<Exclude<AuthorityVerdict, "allowed">, number> = {
  authority_rejected: 403,
  authority_unavailable: 503,
  invalid_authority_response: 502,
};

/**
 * Live screens for an app: sealed capabilities, revocation, the websocket
 * proxy and the viewer page. Mount `handleUpgrade` and `handleRequest` on
 * the app's `http.Server` (see README).
 */
export function createScreens(options: ScreensOptions): Screens {
  return new ScreensHost(parseInput(optionsSchema, options, "ScreensOptions") as ScreensOptions);
}

class ScreensHost implements Screens {
  readonly publicPath: string;
  readonly viewerPath: string;
  readonly terminalPath: string;
  private readonly authority: ScreenAuthority;
  private readonly seal: CapabilitySeal;
  private readonly logger: Logger;
  private readonly onEvent: ((event: ScreenEvent) => void) | undefined;
  private readonly clock: () => number;
  private readonly maxBufferedBytes: number;
  private readonly checkIntervalMs: number;
  private readonly unavailableGraceMs: number;
  private readonly authorityTimeoutMs: number;
  private readonly upstreamTimeoutMs: number;
  private readonly frameAncestors: string;
  private readonly server: WebSocketServer;
  private readonly issued = new Map<string, Issued>();
  /** Revoked capability ids, kept until the capability would have expired. */
  private readonly revoked = new Map<string, number>();
  private readonly bridges = new Set<ScreenBridge>();
  /** Sockets between the upgrade request and the bridge, so `revoke` and `close` reach them too. */
  private readonly pending = new Map<string, { capability: SealedCapability; abort: () => void }>();
  private readonly unwatch: (() => void) | undefined;
  private readonly checkTimer: NodeJS.Timeout;
  private novnc: NovncFiles | undefined;
  private xterm: XtermFiles | undefined;
  private page: { html: string; contentSecurityPolicy: string } | undefined;
  private terminal: { html: string; contentSecurityPolicy: string } | undefined;
  private closing = false;

  constructor(options: ScreensOptions) {
    this.authority = options.authority;
    this.seal = new CapabilitySeal(options.secret);
    this.logger = options.logger ?? silentLogger;
    this.onEvent = options.onEvent;
    this.clock = options.clock ?? Date.now;
    this.publicPath = options.publicPath ?? "/screens";
    this.viewerPath = `${this.publicPath}/viewer`;
    this.terminalPath = `${this.publicPath}/terminal`;
    this.maxBufferedBytes = options.maxBufferedBytes ?? 4 * 1024 * 1024;
    this.checkIntervalMs = options.controlCheckIntervalMs ?? 1000;
    this.unavailableGraceMs = options.controlUnavailableGraceMs ?? 5000;
    this.authorityTimeoutMs = options.authorityTimeoutMs ?? 10_000;
    this.upstreamTimeoutMs = options.upstreamHandshakeTimeoutMs ?? 10_000;
    this.frameAncestors = options.viewerFrameAncestors ?? "'self'";
    this.server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: options.maxClientFrameBytes ?? 1024 * 1024,
      handleProtocols: (protocols) => (protocols.has("binary") ? "binary" : false),
    });
    this.server.on("headers", (headers) => {
      headers.push("Cache-Control: no-store, no-transform");
    });
    this.unwatch = this.authority.watch?.((change) => {
      if (change?.kind !== "control-ended") return;
      for (const bridge of this.bridges) {
        const { mode, computerId, botId } = bridge.capability;
        if (mode !== "view" && computerId === change.computerId && botId === change.botId) void this.recheck(bridge);
      }
    });
    // Control and terminal sockets live only while the authority allows control.
    this.checkTimer = setInterval(() => {
      for (const bridge of this.bridges) if (bridge.capability.mode !== "view") void this.recheck(bridge);
    }, this.checkIntervalMs);
    this.checkTimer.unref();
  }

  async issueScreenCapability(request: IssueScreenCapabilityRequest): Promise<ScreenCapability> {
    const input = parseInput(issueSchema, request, "screen capability request");
    if (this.closing) throw new AgentComputerError("ABORTED", "These screens were closed.");
    // The caller's own lease object: a lease engine only accepts what it issued.
    const control = input.mode === "control" ? request.control : undefined;
    const { computerId, botId, mode, ttlMs } = input;
    const grant = await this.accepted(await this.authority.open({ computerId, botId, mode, ttlMs, control }), mode);
    const { id, sealed, expiresAt } = this.register({ mode, computerId, botId }, ttlMs, grant, control, undefined);
    return {
      id,
      mode,
      url: `${this.publicPath}/c/${sealed}`,
      viewerUrl: `${this.viewerPath}#c=${sealed}&mode=${mode}`,
      expiresAt,
    };
  }

  async issueTerminalCapability(request: IssueTerminalCapabilityRequest): Promise<TerminalCapability> {
    const input = parseInput(issueTerminalSchema, request, "terminal capability request");
    if (this.closing) throw new AgentComputerError("ABORTED", "These screens were closed.");
    const openTerminal = this.authority.openTerminal?.bind(this.authority);
    if (!openTerminal)
      throw new AgentComputerError("UNSUPPORTED", "The screen authority gives no terminals (it has no openTerminal).");
    // The caller's own lease object, as for control.
    const control = request.control;
    const { computerId, botId, ttlMs } = input;
    let screen = this.liveControlScreen(computerId, botId, control);
    let grant: unknown;
    try {
      grant = await openTerminal({
        computerId,
        botId,
        ttlMs,
        control,
        ...(screen ? { controlId: screen.endpointId } : {}),
      });
    } catch (error) {
      if (!screen || !AgentComputerError.is(error, "FENCED_OUT", "NOT_FOUND")) throw error;
      // The gateway no longer has that control endpoint (its computer was
      // replaced, say): the terminal gets a control endpoint of its own.
      screen = undefined;
      grant = await openTerminal({ computerId, botId, ttlMs, control });
    }
    const accepted = await this.accepted(grant, "terminal");
    const policy: ScreenPolicy = { mode: "terminal", computerId, botId };
    const { id, sealed, expiresAt } = this.register(policy, ttlMs, accepted, control, screen?.id);
    return {
      id,
      url: `${this.publicPath}/t/${sealed}`,
      terminalUrl: `${this.terminalPath}#c=${sealed}`,
      expiresAt,
      screenCapabilityId: screen?.id ?? null,
    };
  }

  async revoke(capabilityIdOrUrl: string): Promise<ScreenRevocation> {
    const target = parseInput(z.string().min(1).max(8192), capabilityIdOrUrl, "capability id or URL");
    const sealed =
      /(?:\/[ct]\/|[#&?]c=)([A-Za-z0-9_-]+)/.exec(target)?.[1] ?? (target.length > 64 ? target : undefined);
    let id = target;
    let policy: ScreenPolicy | null = null;
    let expiresAt: number | undefined;
    if (sealed !== undefined) {
      const capability = this.seal.open(sealed);
      if (!capability)
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          "That capability does not open here: revoke takes an id or a URL these screens issued.",
        );
      id = capability.id;
      policy = policyOf(capability);
      expiresAt = capability.expiresAt;
    }
    const issued = this.issued.get(id);
    policy ??= issued?.policy ?? null;
    expiresAt ??= issued?.expiresAt ?? this.clock() + MAX_TTL_MS;
    this.sweep();
    const already = this.revoked.has(id);
    this.revoked.set(id, expiresAt);
    // The terminals living under a control screen end with it.
    const terminals = [...this.issued].filter(([, terminal]) => terminal.screen === id);
    for (const [terminalId, terminal] of terminals) {
      this.revoked.set(terminalId, terminal.expiresAt);
      this.issued.delete(terminalId);
    }
    const ends = (capability: SealedCapability) => capability.id === id || capability.screen === id;
    let closed = 0;
    for (const [, socket] of this.pending)
      if (ends(socket.capability)) {
        socket.abort();
        closed++;
      }
    for (const bridge of [...this.bridges])
      if (ends(bridge.capability)) {
        bridge.close("revoked", 1008, "revoked");
        closed++;
      }
    let endpointRevoked = false;
    if (issued) {
      this.issued.delete(id);
      try {
        await issued.revoke();
        endpointRevoked = true;
      } catch {
        this.logger.warn("screen.capability.endpoint_revoke_failed", { capabilityId: id, policy });
      }
    }
    // The gateway ends them with the control endpoint already; this is for a gateway that did not.
    await Promise.allSettled(terminals.map(([, terminal]) => terminal.revoke()));
    if (!already || closed > 0 || endpointRevoked)
      this.emit({
        type: "screen.capability.revoked",
        at: this.clock(),
        capabilityId: id,
        policy,
        closedConnections: closed,
        endpointRevoked,
      });
    return { id, closedConnections: closed, endpointRevoked };
  }

  updateControl(lease: Lease): number {
    parseInput(leaseShape, lease, "control lease");
    let count = 0;
    for (const issued of this.issued.values())
      if (issued.control && issued.control.key === lease.key && issued.control.token === lease.token) {
        issued.control = lease;
        count++;
      }
    return count;
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = screenPathOf(request.url, this.publicPath);
    if (path.kind === "outside") return false;
    socket.on("error", () => {});
    const connectionId = randomUUID();
    if (path.kind !== "capability") {
      this.reject(socket, connectionId, "invalid_path", 400);
      return true;
    }
    this.accept(request, socket, head, connectionId, path.route, path.sealed).catch(() => {
      refuseUpgrade(socket, 500);
    });
    return true;
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): boolean {
    const path = screenPathOf(request.url, this.publicPath);
    if (path.kind === "outside") return false;
    const connectionId = randomUUID();
    const fail = (
      status: number,
      reason: "not_found" | "method_not_allowed" | "upgrade_required" | "asset_unreadable",
    ) => {
      this.emit({ type: "screen.proxy.http_failed", at: this.clock(), connectionId, policy: null, status, reason });
      const headers: Record<string, string> = {
        "Cache-Control": "no-store, no-transform",
        "Content-Type": "text/plain; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
      };
      if (status === 405) headers.Allow = "GET, HEAD";
      if (status === 426) headers.Upgrade = "websocket";
      response.writeHead(status, headers);
      response.end(request.method === "HEAD" ? undefined : `${status}\n`);
    };
    if (path.kind === "capability") {
      fail(426, "upgrade_required");
      return true;
    }
    if (path.kind === "invalid") {
      fail(404, "not_found");
      return true;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      fail(405, "method_not_allowed");
      return true;
    }
    if (path.kind === "viewer" || path.kind === "terminal-page") {
      const page = path.kind === "viewer" ? this.viewer() : this.terminalPage();
      response.writeHead(200, {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Length": String(Buffer.byteLength(page.html)),
        "Cache-Control": "no-store, no-transform",
        "Content-Security-Policy": page.contentSecurityPolicy,
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
      });
      response.end(request.method === "HEAD" ? undefined : page.html);
      return true;
    }
    let asset: Promise<{ bytes: Buffer; contentType: string } | undefined>;
    if (path.kind === "xterm") asset = this.xtermFiles().read(path.name);
    else {
      const novnc = this.novncFiles();
      if (path.version !== novnc.version) {
        fail(404, "not_found");
        return true;
      }
      asset = novnc
        .read(path.file)
        .then((bytes) => (bytes ? { bytes, contentType: "text/javascript; charset=utf-8" } : undefined));
    }
    asset.then(
      (file) => {
        if (!file) return fail(404, "not_found");
        response.writeHead(200, {
          "Content-Type": file.contentType,
          "Content-Length": String(file.bytes.length),
          // The version is in the path: a new noVNC or xterm is a new URL.
          "Cache-Control": "public, max-age=31536000, immutable, no-transform",
          "X-Content-Type-Options": "nosniff",
        });
        response.end(request.method === "HEAD" ? undefined : file.bytes);
      },
      () => fail(500, "asset_unreadable"),
    );
    return true;
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.checkTimer);
    this.unwatch?.();
    for (const [, socket] of this.pending) socket.abort();
    for (const bridge of [...this.bridges]) bridge.close("proxy", 1001, "going away");
    this.server.close();
  }

  // --- the proxy ---------------------------------------------------------

  private async accept(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    connectionId: string,
    route: "screen" | "terminal",
    sealed: string,
  ): Promise<void> {
    if (!isWebSocketUpgrade(request)) return this.reject(socket, connectionId, "invalid_request", 400);
    const capability = this.seal.open(sealed);
    if (!capability) return this.reject(socket, connectionId, "invalid_capability", 401);
    const policy = policyOf(capability);
    // A screen is served at /c/ only, a terminal at /t/ only: a view
    // capability never reaches a shell, a terminal never an RFB stream.
    if ((capability.mode === "terminal") !== (route === "terminal"))
      return this.reject(socket, connectionId, "wrong_route", 403, capability.id, policy);
    const refused = (reason: "capability_expired" | "capability_revoked" | Exclude<AuthorityVerdict, "allowed">) =>
      this.reject(
        socket,
        connectionId,
        reason,
        reason.startsWith("capability_") ? 410 : REFUSAL_STATUS[reason as Exclude<AuthorityVerdict, "allowed">],
        capability.id,
        policy,
      );
    if (this.clock() >= capability.expiresAt) return refused("capability_expired");
    this.sweep();
    if (this.isRevoked(capability)) return refused("capability_revoked");
    if (this.closing) return refuseUpgrade(socket, 503);

    const started = performance.now();
    let aborted = false;
    let upstream: WebSocket | undefined;
    const abort = () => {
      aborted = true;
      upstream?.terminate();
      refuseUpgrade(socket, 410);
    };
    this.pending.set(connectionId, { capability, abort });
    try {
      const verdict = await authorityVerdict(
        () => this.authority.check(this.checkRequest(capability)),
        this.authorityTimeoutMs,
      );
      if (aborted) return;
      if (verdict !== "allowed") return refused(verdict);

      const early: BridgeFrame[] = [];
      const connected = await new Promise<{ ok: true } | { ok: false; status: number | null; clientGone: boolean }>(
        (resolve) => {
          const ws = new WebSocket(capability.endpoint.url, {
            headers: { Authorization: `Bearer ${capability.endpoint.token}` },
            perMessageDeflate: false,
            followRedirects: false,
            handshakeTimeout: this.upstreamTimeoutMs,
            maxPayload: 64 * 1024 * 1024,
          });
          upstream = ws;
          let status: number | null = null;
          const onClientGone = () => {
            ws.terminate();
            resolve({ ok: false, status: null, clientGone: true });
          };
          socket.once("close", onClientGone);
          ws.on("message", (data, binary) =>
            early.push({ data: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), binary }),
          );
          ws.once("unexpected-response", (_req, res) => {
            status = res.statusCode ?? null;
            res.resume();
            ws.terminate();
          });
          ws.once("open", () => {
            socket.off("close", onClientGone);
            resolve({ ok: true });
          });
          ws.on("error", () => {});
          ws.once("close", () => {
            socket.off("close", onClientGone);
            resolve({ ok: false, status, clientGone: false });
          });
        },
      );
      const ws = upstream!;
      if (aborted) {
        ws.terminate();
        return;
      }
      if (!connected.ok) {
        this.emit({
          type: "screen.proxy.websocket_handshake_failed",
          at: this.clock(),
          connectionId,
          capabilityId: capability.id,
          policy,
          reason: connected.clientGone
            ? "client_gone"
            : connected.status === null
              ? "upstream_unreachable"
              : "upstream_refused",
          upstreamStatus: connected.status,
          durationMs: Math.round(performance.now() - started),
        });
        refuseUpgrade(socket, 502);
        return;
      }
      if (this.isRevoked(capability) || this.closing) {
        ws.terminate();
        return refused("capability_revoked");
      }
      ws.removeAllListeners("message");
      let upgraded = false;
      this.server.handleUpgrade(request, socket, head, (client) => {
        upgraded = true;
        const bridge = new ScreenBridge(connectionId, capability, client, ws, this.maxBufferedBytes, (done, result) =>
          this.bridgeClosed(done, result),
        );
        this.bridges.add(bridge);
        this.emit({
          type: "screen.proxy.websocket_upgraded",
          at: this.clock(),
          connectionId,
          capabilityId: capability.id,
          policy,
        });
        bridge.start(early);
      });
      // ws refuses an upgrade it cannot complete without calling back.
      if (!upgraded) ws.terminate();
    } finally {
      this.pending.delete(connectionId);
    }
  }

  private bridgeClosed(
    bridge: ScreenBridge,
    result: { closer: BridgeCloser; code: number; handshakeCompleted: boolean; droppedClientBytes: number },
  ): void {
    this.bridges.delete(bridge);
    const { capability } = bridge;
    this.emit({
      type: "screen.proxy.websocket_closed",
      at: this.clock(),
      connectionId: bridge.connectionId,
      capabilityId: capability.id,
      policy: policyOf(capability),
      handshakeCompleted: result.handshakeCompleted,
      durationMs: Math.round(performance.now() - bridge.startedAt),
      closer: result.closer,
      code: result.code,
      droppedClientBytes: result.droppedClientBytes,
    });
  }

  /** Asks the authority again about a live control socket; closes it ("revoked") once not allowed. */
  private async recheck(bridge: ScreenBridge): Promise<void> {
    if (bridge.checking) return;
    bridge.checking = true;
    try {
      const verdict = await authorityVerdict(
        () => this.authority.check(this.checkRequest(bridge.capability)),
        this.authorityTimeoutMs,
      );
      if (verdict === "allowed") bridge.lastAllowedAt = performance.now();
      else if (
        verdict !== "authority_unavailable" ||
        performance.now() - bridge.lastAllowedAt > this.unavailableGraceMs
      )
        bridge.close("revoked", 1008, "revoked");
    } finally {
      bridge.checking = false;
    }
  }

  /** What the authority is asked about a socket: a terminal is checked as control, with kind "terminal". */
  private checkRequest(capability: SealedCapability): ScreenCheckRequest {
    const { computerId, botId } = capability;
    const kind = capability.mode === "terminal" ? "terminal" : "screen";
    if (capability.mode === "view") return { computerId, botId, mode: "view", kind };
    const held = this.issued.get(capability.id)?.control;
    return {
      computerId,
      botId,
      mode: "control",
      kind,
      control: held ?? (Object.freeze({ ...capability.control }) as Lease),
    };
  }

  /** Revoked here, or a terminal whose control screen was. */
  private isRevoked(capability: SealedCapability): boolean {
    return this.revoked.has(capability.id) || (capability.screen !== undefined && this.revoked.has(capability.screen));
  }

  private reject(
    socket: Duplex,
    connectionId: string,
    reason: Extract<ScreenEvent, { type: "screen.proxy.target_rejected" }>["reason"],
    status: number,
    capabilityId: string | null = null,
    policy: ScreenPolicy | null = null,
  ): void {
    this.emit({
      type: "screen.proxy.target_rejected",
      at: this.clock(),
      connectionId,
      capabilityId,
      policy,
      reason,
      status,
    });
    refuseUpgrade(socket, status);
  }

  // --- issuing -------------------------------------------------------------

  /**
   * The authority's grant when it is well formed and of the kind asked for
   * (a screen endpoint in that mode, or a terminal endpoint, which has no
   * mode); otherwise revokes it and throws UNAVAILABLE.
   */
  private async accepted(grant: unknown, asked: "view" | "control" | "terminal"): Promise<Grant> {
    const parsed = grantSchema.safeParse(grant);
    const given = parsed.success ? (parsed.data.endpoint.mode ?? "terminal") : undefined;
    if (parsed.success && given === asked) return parsed.data;
    const revoke = (grant as { revoke?: unknown } | null | undefined)?.revoke;
    await Promise.resolve(typeof revoke === "function" ? revoke.call(grant) : undefined).catch(() => {});
    throw new AgentComputerError(
      "UNAVAILABLE",
      parsed.success
        ? `The screen authority gave a ${given} endpoint for a ${asked} request; refused.`
        : `The screen authority gave a malformed endpoint (${parsed.error.issues.map((i) => i.path.join(".") || "(root)").join(", ")}); refused.`,
      { retryable: false },
    );
  }

  /** Seals a capability for `grant`, remembers it and reports it. */
  private register(
    policy: ScreenPolicy,
    ttlMs: number,
    grant: Grant,
    control: Lease | undefined,
    screen: string | undefined,
  ): { id: string; sealed: string; expiresAt: number } {
    const { endpoint } = grant;
    const id = randomUUID();
    const expiresAt = Math.min(this.clock() + ttlMs, endpoint.expiresAt);
    const capability: SealedCapability = {
      id,
      ...policy,
      expiresAt,
      endpoint: { id: endpoint.id, url: endpoint.url, token: endpoint.token, expiresAt: endpoint.expiresAt },
      ...(control
        ? {
            control: {
              kind: "user-control" as const,
              key: control.key,
              holder: control.holder,
              token: control.token,
              computerId: policy.computerId,
              botId: policy.botId,
              ttlMs: control.ttlMs,
              grantedAt: control.grantedAt,
              expiresAt: control.expiresAt,
            },
          }
        : {}),
      ...(screen === undefined ? {} : { screen }),
    };
    const sealed = this.seal.seal(capability);
    this.sweep();
    this.issued.set(id, { policy, expiresAt, revoke: grant.revoke, endpointId: endpoint.id, screen, control });
    this.emit({ type: "screen.capability.issued", at: this.clock(), capabilityId: id, policy, expiresAt });
    return { id, sealed, expiresAt };
  }

  /**
   * The live control screen capability these screens issued for this bot
   * under this lease (the latest to expire), for a terminal to live under.
   */
  private liveControlScreen(
    computerId: string,
    botId: string,
    lease: Lease,
  ): { id: string; endpointId: string } | undefined {
    this.sweep();
    const now = this.clock();
    let best: { id: string; endpointId: string; expiresAt: number } | undefined;
    for (const [id, issued] of this.issued) {
      const { policy, control } = issued;
      if (policy.mode !== "control" || policy.computerId !== computerId || policy.botId !== botId) continue;
      if (control?.key !== lease.key || control.token !== lease.token) continue;
      if (issued.expiresAt <= now || this.revoked.has(id)) continue;
      if (!best || issued.expiresAt > best.expiresAt)
        best = { id, endpointId: issued.endpointId, expiresAt: issued.expiresAt };
    }
    return best && { id: best.id, endpointId: best.endpointId };
  }

  // --- housekeeping -------------------------------------------------------

  /** Forgets revocations and issued capabilities past their expiry (a live socket keeps its own). */
  private sweep(): void {
    const now = this.clock();
    for (const [id, expiresAt] of this.revoked) if (expiresAt <= now) this.revoked.delete(id);
    const live = new Set([...this.bridges].map((b) => b.capability.id));
    for (const [id, issued] of this.issued) if (issued.expiresAt <= now && !live.has(id)) this.issued.delete(id);
  }

  private viewer(): { html: string; contentSecurityPolicy: string } {
    this.page ??= viewerPage({
      publicPath: this.publicPath,
      rfbModule: `${this.publicPath}/novnc/${this.novncFiles().version}/core/rfb.js`,
      frameAncestors: this.frameAncestors,
    });
    return this.page;
  }

  private terminalPage(): { html: string; contentSecurityPolicy: string } {
    this.terminal ??= terminalPage({
      publicPath: this.publicPath,
      files: this.xtermFiles().names,
      frameAncestors: this.frameAncestors,
    });
    return this.terminal;
  }

  private xtermFiles(): XtermFiles {
    this.xterm ??= new XtermFiles();
    return this.xterm;
  }

  private novncFiles(): NovncFiles {
    this.novnc ??= new NovncFiles();
    return this.novnc;
  }

  private emit(event: ScreenEvent): void {
    const { type, ...fields } = event;
    const level = type === "screen.proxy.target_rejected" || type.endsWith("_failed") ? "warn" : "info";
    try {
      this.logger[level](type, fields);
    } catch {}
    try {
      this.onEvent?.(event);
    } catch {}
  }
}

function policyOf(capability: SealedCapability): ScreenPolicy {
  return { mode: capability.mode, computerId: capability.computerId, botId: capability.botId };
}

function isWebSocketUpgrade(request: IncomingMessage): boolean {
  const key = request.headers["sec-websocket-key"];
  const version = request.headers["sec-websocket-version"];
  return (
    request.method === "GET" &&
    request.headers.upgrade?.toLowerCase() === "websocket" &&
    typeof key === "string" &&
    /^[+/0-9A-Za-z]{22}==$/.test(key) &&
    (version === "13" || version === "8")
  );
}
