import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { SCREEN_USE_NOTE_MS } from "../authority/screen-authority.js";
import type { CapabilityRegistry } from "../capability/capability-registry.js";
import type { CapabilitySeal } from "../capability/capability-seal.js";
import { policyOf } from "../capability/policy-of.js";
import type { SealedCapability } from "../capability/sealed-capability.js";
import type { ScreenEvent } from "../screen-event.js";
import type { AuthorityCheck } from "./authority-check.js";
import type { AuthorityVerdict } from "./authority-verdict.js";
import { isWebSocketUpgrade } from "./is-websocket-upgrade.js";
import type { LiveSockets } from "./live-sockets.js";
import { refuseUpgrade } from "./refuse-upgrade.js";
import { type BridgeCloser, type BridgeFrame, ScreenBridge } from "./screen-bridge.js";
import { screenPathOf } from "./screen-path.js";
import { connectUpstream, type UpstreamFailure } from "./upstream-connection.js";

/** What the proxy works with; the numbers are `ScreensOptions`' with their defaults. */
interface ScreenProxyParts {
  readonly publicPath: string;
  readonly seal: CapabilitySeal;
  readonly registry: CapabilityRegistry;
  readonly sockets: LiveSockets;
  readonly check: AuthorityCheck;
  readonly emit: (event: ScreenEvent) => void;
  readonly clock: () => number;
  readonly maxClientFrameBytes: number;
  readonly maxBufferedBytes: number;
  readonly upstreamTimeoutMs: number;
}

/** One websocket upgrade request, from `handleUpgrade` on. */
interface Upgrade {
  readonly request: IncomingMessage;
  readonly socket: Duplex;
  readonly head: Buffer;
  /** Random per socket, for events. */
  readonly connectionId: string;
}

type Refusal = "capability_expired" | "capability_revoked" | Exclude<AuthorityVerdict, "allowed">;

const REFUSAL_STATUS: Record<Exclude<AuthorityVerdict, "allowed">, number> = {
  authority_rejected: 403,
  authority_unavailable: 503,
  invalid_authority_response: 502,
};

/**
 * The websocket proxy (`Screens.handleUpgrade`): opens the capability in
 * the path, refuses it unless it is on its route, unexpired, unrevoked and
 * allowed by the authority, then connects to the gateway and bridges the
 * browser's socket to it.
 */
export class ScreenProxy {
  private readonly server: WebSocketServer;
  private closing = false;
  /** Connection id -> the timer that reports its socket as use while it is open. */
  private readonly useNotes = new Map<string, NodeJS.Timeout>();

  constructor(private readonly parts: ScreenProxyParts) {
    this.server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: parts.maxClientFrameBytes,
      handleProtocols: (protocols) => (protocols.has("binary") ? "binary" : false),
    });
    this.server.on("headers", (headers) => {
      headers.push("Cache-Control: no-store, no-transform");
    });
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = screenPathOf(request.url, this.parts.publicPath);
    if (path.kind === "outside") return false;
    socket.on("error", () => {});
    const upgrade: Upgrade = { request, socket, head, connectionId: randomUUID() };
    if (path.kind !== "capability") {
      this.reject(upgrade, "invalid_path", 400);
      return true;
    }
    this.accept(upgrade, path.route, path.sealed).catch(() => {
      refuseUpgrade(socket, 500);
    });
    return true;
  }

  /** Ends every live socket (closer "proxy") and refuses new ones. */
  close(): void {
    this.closing = true;
    this.parts.sockets.closeAll();
    this.server.close();
  }

  /** Refuses what is wrong on its face (request, seal, route, expiry, revocation), then bridges. */
  private async accept(upgrade: Upgrade, route: "screen" | "terminal", sealed: string): Promise<void> {
    if (!isWebSocketUpgrade(upgrade.request)) return this.reject(upgrade, "invalid_request", 400);
    const capability = this.parts.seal.open(sealed);
    if (!capability) return this.reject(upgrade, "invalid_capability", 401);
    // A screen is served at /c/ only, a terminal at /t/ only: a view
    // capability never reaches a shell, a terminal never an RFB stream.
    if ((capability.mode === "terminal") !== (route === "terminal"))
      return this.reject(upgrade, "wrong_route", 403, capability);
    if (this.parts.clock() >= capability.expiresAt) return this.refuse(upgrade, capability, "capability_expired");
    this.parts.registry.sweep();
    if (this.parts.registry.isRevoked(capability)) return this.refuse(upgrade, capability, "capability_revoked");
    if (this.closing) return refuseUpgrade(upgrade.socket, 503);
    return this.bridge(upgrade, capability);
  }

  /** Asks the authority, connects to the gateway and bridges; `revoke` and `close` may abort it meanwhile. */
  private async bridge(upgrade: Upgrade, capability: SealedCapability): Promise<void> {
    const started = performance.now();
    let aborted = false;
    let connection: ReturnType<typeof connectUpstream> | undefined;
    this.parts.sockets.wait(upgrade.connectionId, capability, () => {
      aborted = true;
      connection?.terminate();
      refuseUpgrade(upgrade.socket, 410);
    });
    try {
      const verdict = await this.parts.check.verdict(capability);
      if (aborted) return;
      if (verdict !== "allowed") return this.refuse(upgrade, capability, verdict);
      connection = connectUpstream(capability.endpoint, upgrade.socket, this.parts.upstreamTimeoutMs, (stage, status) =>
        this.parts.emit({
          type: "screen.proxy.http_upstream_response",
          at: this.parts.clock(),
          connectionId: upgrade.connectionId,
          capabilityId: capability.id,
          policy: policyOf(capability),
          stage,
          status,
          durationMs: Math.round(performance.now() - started),
        }),
      );
      const connected = await connection.connected;
      if (aborted) {
        connection.terminate();
        return;
      }
      if (!connected.ok) return this.handshakeFailed(upgrade, capability, connected, started);
      if (this.parts.registry.isRevoked(capability) || this.closing) {
        connection.terminate();
        return this.refuse(upgrade, capability, "capability_revoked");
      }
      this.upgrade(upgrade, capability, connected.ws, connection.early);
    } finally {
      this.parts.sockets.settled(upgrade.connectionId);
    }
  }

  /** Completes the browser's upgrade and starts relaying between it and `upstream`. */
  private upgrade(upgrade: Upgrade, capability: SealedCapability, upstream: WebSocket, early: BridgeFrame[]): void {
    const { connectionId } = upgrade;
    upstream.removeAllListeners("message");
    let upgraded = false;
    this.server.handleUpgrade(upgrade.request, upgrade.socket, upgrade.head, (client) => {
      upgraded = true;
      const { maxBufferedBytes } = this.parts;
      const bridge = new ScreenBridge(
        connectionId,
        capability,
        client,
        upstream,
        maxBufferedBytes,
        (done, result) => this.bridgeClosed(done, result),
        (failed, side, code) =>
          this.parts.emit({
            type: "screen.proxy.websocket_error",
            at: this.parts.clock(),
            connectionId: failed.connectionId,
            capabilityId: failed.capability.id,
            policy: policyOf(failed.capability),
            side,
            code,
          }),
      );
      this.parts.sockets.add(bridge);
      this.parts.check.inUse(capability);
      const noting = setInterval(() => this.parts.check.inUse(capability), SCREEN_USE_NOTE_MS);
      this.useNotes.set(connectionId, noting.unref());
      this.parts.emit({
        type: "screen.proxy.websocket_upgraded",
        at: this.parts.clock(),
        connectionId,
        capabilityId: capability.id,
        policy: policyOf(capability),
      });
      bridge.start(early);
    });
    // ws refuses an upgrade it cannot complete without calling back.
    if (!upgraded) upstream.terminate();
  }

  private handshakeFailed(
    upgrade: Upgrade,
    capability: SealedCapability,
    failed: UpstreamFailure,
    started: number,
  ): void {
    this.parts.emit({
      type: "screen.proxy.websocket_handshake_failed",
      at: this.parts.clock(),
      connectionId: upgrade.connectionId,
      capabilityId: capability.id,
      policy: policyOf(capability),
      reason: failed.clientGone
        ? "client_gone"
        : failed.unproven
          ? "upstream_unproven"
          : failed.status === null
            ? "upstream_unreachable"
            : "upstream_refused",
      upstreamStatus: failed.status,
      durationMs: Math.round(performance.now() - started),
    });
    refuseUpgrade(upgrade.socket, 502);
  }

  private bridgeClosed(
    bridge: ScreenBridge,
    result: { closer: BridgeCloser; code: number; handshakeCompleted: boolean; droppedClientBytes: number },
  ): void {
    this.parts.sockets.remove(bridge);
    const { capability } = bridge;
    clearInterval(this.useNotes.get(bridge.connectionId));
    this.useNotes.delete(bridge.connectionId);
    // The idle time counts from the close.
    this.parts.check.inUse(capability);
    this.parts.emit({
      type: "screen.proxy.websocket_closed",
      at: this.parts.clock(),
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

  /** Refuses a capability that opened: 410 once it expired or was revoked, else by the authority's verdict. */
  private refuse(upgrade: Upgrade, capability: SealedCapability, reason: Refusal): void {
    const status = reason.startsWith("capability_")
      ? 410
      : REFUSAL_STATUS[reason as Exclude<AuthorityVerdict, "allowed">];
    this.reject(upgrade, reason, status, capability);
  }

  private reject(
    upgrade: Upgrade,
    reason: Extract<ScreenEvent, { type: "screen.proxy.target_rejected" }>["reason"],
    status: number,
    capability?: SealedCapability,
  ): void {
    this.parts.emit({
      type: "screen.proxy.target_rejected",
      at: this.parts.clock(),
      connectionId: upgrade.connectionId,
      capabilityId: capability?.id ?? null,
      policy: capability ? policyOf(capability) : null,
      reason,
      status,
    });
    refuseUpgrade(upgrade.socket, status);
  }
}
