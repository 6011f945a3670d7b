import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import {
  capabilityTokenHash,
  GATEWAY_CHALLENGE_HEADER,
  GATEWAY_PROOF_HEADER,
  gatewayChallengeHeader,
  gatewayProof,
  gatewayProofMatches,
  newGatewayNonce,
  parseGatewayAuthorization,
} from "@agent-computer/core";
import { WebSocketServer } from "ws";
import { CliError } from "./cli-error.js";
import type { DesktopService } from "./desktop-service.js";
import { type DesktopState, FIRST_DISPLAY } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { CAPABILITY_ID, type Capability, type EndReason, isValidClaim } from "./gateway-capability.js";
import type { GatewayRequest } from "./gateway-control.js";
import { type GatewayFiles, slotRecordNow, slotServes } from "./gateway-files.js";
import type { GatewayLog } from "./gateway-log.js";
import { terminalFrameOf } from "./terminal-frames.js";
import type { TerminalBackend, TerminalSession } from "./terminal-servers.js";
import { relayToVnc, type VncTarget } from "./vnc-relay.js";
import type { VncServers } from "./vnc-servers.js";
import { bridge } from "./websocket-bridge.js";

/** Tokens: 32 random bytes, base64url. Only their SHA-256 is kept. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** No RFB client message comes near this (noVNC's largest are clipboard texts). */
const MAX_PAYLOAD = 256 * 1024;
const MAX_LIVE_CAPABILITIES = 1024;
const MAX_CONNECTIONS_PER_CAPABILITY = 16;
const MAX_CONNECTIONS = 256;
/** Ended capabilities are remembered this long (and at most this many) so they answer 410, not 404. */
const KEEP_ENDED_MS = 60 * 60_000;
const MAX_REMEMBERED = 8192;

const sha256 = capabilityTokenHash;
/** Challenges for clients that check the gateway (core's gateway-proof.ts): single use, short-lived, bounded. */
const CHALLENGE_TTL_MS = 30_000;
const MAX_CHALLENGES = 4096;

/**
 * The computer's screen gateway (docs/architecture.md §4, §7): one process, one TCP port
 * for every desktop. The `desktop` command grants and revokes capabilities
 * over a private control socket; clients connect to
 * `ws://<computer>:6080/screens/<id>` (or `/terminals/<id>`, a shell under
 * a control capability) with `Authorization: Bearer <token>`.
 * Refusals are plain HTTP answers before any upgrade: 401 (token missing
 * or wrong), 404 (unknown path or id), 410 (expired, revoked, or its
 * desktop stopped or was given to another bot).
 */
export class ScreenGateway {
  private readonly capabilities = new Map<string, Capability>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_PAYLOAD,
    perMessageDeflate: false,
    clientTracking: false,
    // noVNC offers "binary"; a client offering nothing gets no subprotocol.
    handleProtocols: (protocols) => (protocols.has("binary") ? "binary" : false),
  });
  private connectionCount = 0;
  private openConnections = 0;
  private sweeping = false;
  /** Challenges handed out, by nonce, with when they lapse. */
  private readonly challenges = new Map<string, number>();
  /** The proof a 101 answer carries, for upgrades admitted by a challenge. */
  private readonly proofs = new WeakMap<IncomingMessage, string>();

  constructor(
    private readonly state: DesktopState,
    private readonly files: GatewayFiles,
    private readonly log: GatewayLog,
    private readonly vnc: VncServers,
    private readonly terminals: TerminalBackend,
    private readonly service: DesktopService,
  ) {
    this.wss.on("headers", (headers, req) => {
      const proof = this.proofs.get(req);
      if (proof) headers.push(`${GATEWAY_PROOF_HEADER}: ${proof}`);
    });
  }

  handle(request: GatewayRequest): Promise<Record<string, unknown>> {
    switch (request?.op) {
      case "ping":
        return Promise.resolve({ pid: process.pid });
      case "grant":
        return this.grant(request);
      case "grant-terminal":
        return this.grantTerminal(request);
      case "revoke":
        return this.revoke(request.id);
      case "close-slot":
        return this.closeSlot(request.slot);
      case "service-key":
        return Promise.resolve(this.service.addKey(request.key));
      default:
        return Promise.reject(new CliError("INVALID_ARGUMENT", "Unknown gateway request."));
    }
  }

  private async grant(request: Extract<GatewayRequest, { op: "grant" }>): Promise<Record<string, unknown>> {
    const { bot, slot, incarnation, mode, ttlMs } = request;
    if ((mode !== "view" && mode !== "control") || !isValidClaim(request)) {
      throw new CliError("INVALID_ARGUMENT", "Invalid grant request.");
    }
    const gone = () => new CliError("NOT_FOUND", `${bot} has no running desktop on this computer; start it first.`);
    const serves = () => {
      const record = slotRecordNow(this.state, slot);
      return slotServes(record, incarnation) && record?.bot === bot;
    };
    if (!serves()) throw gone();
    let live = 0;
    for (const c of this.capabilities.values()) if (!c.ended) live++;
    if (live >= MAX_LIVE_CAPABILITIES) {
      throw new CliError("LIMIT_EXCEEDED", `This computer has ${live} live screen capabilities; revoke some first.`);
    }
    await this.vnc.ensure(slot, mode, incarnation);
    const id = randomBytes(16).toString("base64url");
    const token = randomBytes(32).toString("base64url");
    const capability: Capability = {
      kind: "screens",
      id,
      mode,
      bot,
      slot,
      incarnation,
      tokenHash: sha256(token),
      expiresAt: Date.now() + ttlMs,
      socketPath: this.files.capabilitySocket(id),
      connections: new Map(),
    };
    capability.server = await this.listenCapability(capability);
    this.capabilities.set(id, capability);
    // The desktop may have stopped while its screen server started.
    if (!serves()) {
      this.end(capability, "desktop-stopped", true);
      throw gone();
    }
    this.log.write("grant", { cap: id, kind: "screens", mode, slot, bot, ttlMs });
    return { id, token, path: `/screens/${id}`, expiresAt: capability.expiresAt, mode };
  }

  /**
   * The capability's own Unix socket: each connection to it is bridged to
   * its display's x11vnc in its mode (through the VNC password only the
   * gateway holds, vnc-relay.ts), or for a terminal to its control
   * session's PTY server (which gives the connection a shell of its own).
   */
  private async listenCapability(capability: Capability): Promise<Server> {
    const target = (): Promise<VncTarget | { shell: Socket }> =>
      capability.kind === "terminals"
        ? this.terminals.connect(terminalSessionOf(capability)).then((shell) => ({ shell }))
        : this.vnc.ensure(capability.slot, capability.mode, capability.incarnation);
    const server = createServer((local) => {
      local.on("error", () => local.destroy());
      if (capability.ended) {
        local.destroy();
        return;
      }
      target().then(
        (where) => {
          if (local.destroyed || capability.ended) {
            if ("shell" in where) where.shell.destroy();
            local.destroy();
          } else if ("shell" in where) {
            pipeBothWays(local, where.shell);
          } else {
            relayToVnc(local, where).catch((error: Error) =>
              this.log.write("vnc-handshake-failed", { cap: capability.id, slot: capability.slot, why: error.message }),
            );
          }
        },
        () => local.destroy(),
      );
    });
    rmSync(capability.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(capability.socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    chmodSync(capability.socketPath, 0o600);
    return server;
  }

  /**
   * A terminal under a live control capability of the same desktop claim
   * (or under a new one it owns). Its PTY server starts here, so a computer
   * that cannot run one refuses the grant rather than the connection.
   */
  private async grantTerminal(
    request: Extract<GatewayRequest, { op: "grant-terminal" }>,
  ): Promise<Record<string, unknown>> {
    const { bot, slot, incarnation, controlId, ttlMs, home } = request;
    if (
      !isValidClaim(request) ||
      typeof home !== "string" ||
      !home.startsWith("/") ||
      (controlId !== undefined && (typeof controlId !== "string" || !CAPABILITY_ID.test(controlId)))
    ) {
      throw new CliError("INVALID_ARGUMENT", "Invalid terminal grant request.");
    }
    let control: Capability;
    if (controlId === undefined) {
      const granted = await this.grant({ op: "grant", bot, slot, incarnation, mode: "control", ttlMs });
      control = this.capabilities.get(granted.id as string) as Capability;
    } else {
      control = this.liveControl(controlId, bot, slot, incarnation);
    }
    const id = randomBytes(16).toString("base64url");
    const token = randomBytes(32).toString("base64url");
    const capability: Capability = {
      kind: "terminals",
      id,
      mode: "control",
      bot,
      slot,
      incarnation,
      tokenHash: sha256(token),
      // A terminal never outlives its control capability.
      expiresAt: Math.min(Date.now() + ttlMs, control.expiresAt),
      socketPath: this.files.capabilitySocket(id),
      connections: new Map(),
      control: { id: control.id, owned: controlId === undefined },
      home,
    };
    // Known before its server starts, so the sweep never takes the server for an idle one.
    this.capabilities.set(id, capability);
    try {
      await this.terminals.ready(terminalSessionOf(capability));
      const server = await this.listenCapability(capability);
      if (capability.ended) {
        server.close();
        rmSync(capability.socketPath, { force: true });
      } else capability.server = server;
    } catch (error) {
      this.end(capability, "grant-failed", true);
      if (capability.control?.owned) this.end(control, "revoked", true);
      throw error;
    }
    if (capability.ended) {
      throw new CliError("FENCED_OUT", `The control capability ${control.id} ended while the terminal started.`);
    }
    this.log.write("grant", { cap: id, kind: "terminals", control: control.id, slot, bot, ttlMs });
    return { id, token, path: `/terminals/${id}`, expiresAt: capability.expiresAt, controlId: control.id };
  }

  /** The control capability a terminal may live under, or the error that says why not. */
  private liveControl(controlId: string, bot: string, slot: number, incarnation: string): Capability {
    const control = this.capabilities.get(controlId);
    if (!control) {
      throw new CliError(
        "NOT_FOUND",
        `No screen capability ${controlId} on this computer; grant a control capability first.`,
      );
    }
    if (control.kind !== "screens" || control.mode !== "control") {
      throw new CliError(
        "FENCED_OUT",
        `${controlId} is not a control capability: only a person in control of the screen opens a terminal.`,
      );
    }
    if (!control.ended && Date.now() >= control.expiresAt) this.end(control, "expired", false);
    if (!control.ended && !slotServes(slotRecordNow(this.state, control.slot), control.incarnation)) {
      this.end(control, "desktop-stopped", true);
    }
    if (control.ended) {
      throw new CliError(
        "FENCED_OUT",
        `The control capability ${controlId} ended (${control.ended}); grant a new one.`,
      );
    }
    if (control.bot !== bot || control.slot !== slot || control.incarnation !== incarnation) {
      throw new CliError("FENCED_OUT", `The control capability ${controlId} is not for the running desktop of ${bot}.`);
    }
    return control;
  }

  /** Ends any capability; a terminal that owns its control capability ends that too. Returns once shells are hung up. */
  private async revoke(id: unknown): Promise<Record<string, unknown>> {
    if (typeof id !== "string" || !CAPABILITY_ID.test(id)) {
      throw new CliError("INVALID_ARGUMENT", "--id must be a capability id as grant printed it.");
    }
    const capability = this.capabilities.get(id);
    if (!capability) return { revoked: false };
    const open = capability.connections.size;
    const already = capability.ended === "revoked";
    this.end(capability, "revoked", true);
    const owned = capability.control?.owned ? this.capabilities.get(capability.control.id) : undefined;
    if (owned) this.end(owned, "revoked", true);
    if (!already) {
      this.log.write("revoke", {
        cap: id,
        kind: capability.kind,
        mode: capability.mode,
        slot: capability.slot,
        closed: open,
      });
    }
    await this.terminals.settle();
    return { revoked: !already };
  }

  /** Before a slot is released: every capability of it ends and its connections close; its x11vnc stop. */
  private async closeSlot(slot: unknown): Promise<Record<string, unknown>> {
    if (!Number.isInteger(slot) || (slot as number) < 0) throw new CliError("INVALID_ARGUMENT", "Invalid slot.");
    let closed = 0;
    for (const capability of this.capabilities.values()) {
      if (capability.slot !== slot) continue;
      closed += capability.connections.size;
      this.end(capability, "desktop-stopped", true);
    }
    // Shells hung up, PTY servers gone, before the display can go to another bot.
    await this.terminals.settle();
    await this.vnc.settle(slot as number);
    if (!(await this.vnc.stopSlot(slot as number))) {
      throw new CliError("UNAVAILABLE", `The screen servers of display slot ${slot} did not stop.`);
    }
    this.log.write("close-slot", { slot: slot as number, closed });
    return { closed };
  }

  /**
   * Ends a capability: its socket goes, new connections are refused;
   * `closeOpen` also drops its open ones. A control capability that ends,
   * however, takes its terminals with it: their connections close and the
   * PTY server stops (`terminals.settle()` waits for that).
   */
  private end(capability: Capability, why: EndReason, closeOpen: boolean): void {
    if (!capability.ended) {
      capability.ended = why;
      capability.endedAt = Date.now();
      capability.server?.close();
      capability.server = undefined;
      rmSync(capability.socketPath, { force: true });
      this.log.write("end", {
        cap: capability.id,
        kind: capability.kind,
        mode: capability.mode,
        slot: capability.slot,
        why,
      });
    }
    if (capability.kind === "screens" && capability.mode === "control") {
      const reason = why === "desktop-stopped" || why === "gateway-stopping" ? why : "control-ended";
      for (const terminal of this.capabilities.values()) {
        if (terminal.control?.id === capability.id) this.end(terminal, reason, true);
      }
      void this.terminals.stop(capability.id);
    }
    if (closeOpen) {
      const [code, reason] = why === "revoked" || why === "control-ended" ? [1008, why] : [1001, why];
      for (const connection of [...capability.connections.values()]) connection.close(code, reason);
    }
    if (capability.kind === "terminals") this.retireIdleTerminalServers();
  }

  /** A PTY server whose terminals all ended and closed stops: no shell runs for nobody. */
  private retireIdleTerminalServers(): void {
    for (const controlId of this.terminals.controlIds()) {
      let used = false;
      for (const c of this.capabilities.values()) {
        if (c.control?.id === controlId && (!c.ended || c.connections.size > 0)) used = true;
      }
      if (!used) void this.terminals.stop(controlId);
    }
  }

  /** Plain HTTP: only websockets are served. */
  request(req: IncomingMessage, res: ServerResponse): void {
    const route = routeOf(req.url);
    if (route && req.headers[GATEWAY_CHALLENGE_HEADER] !== undefined) {
      res.writeHead(401, {
        "Content-Type": "text/plain; charset=utf-8",
        Connection: "close",
        "WWW-Authenticate": gatewayChallengeHeader(this.challenge()),
      });
      res.end("Answer the challenge with a websocket upgrade.\n");
      return;
    }
    res.writeHead(route ? 426 : 404, { "Content-Type": "text/plain; charset=utf-8", Connection: "close" });
    res.end(route ? "Connect with a websocket.\n" : "Not found.\n");
  }

  /** A fresh single-use nonce; the oldest go first when too many wait. */
  private challenge(): string {
    const now = Date.now();
    for (const [nonce, lapses] of this.challenges) {
      if (lapses > now && this.challenges.size < MAX_CHALLENGES) break;
      this.challenges.delete(nonce);
    }
    const nonce = newGatewayNonce();
    this.challenges.set(nonce, now + CHALLENGE_TTL_MS);
    return nonce;
  }

  /** Whether `req` proves the capability's token against a challenge this gateway gave; sets the answer's proof. */
  private provesToken(req: IncomingMessage, capability: Capability): boolean {
    const given = parseGatewayAuthorization(req.headers.authorization);
    if (!given) return false;
    const lapses = this.challenges.get(given.challenge);
    this.challenges.delete(given.challenge);
    if (lapses === undefined || lapses <= Date.now()) return false;
    const expected = gatewayProof(capability.tokenHash, "client", given.challenge, given.nonce);
    if (!gatewayProofMatches(expected, given.proof)) return false;
    this.proofs.set(req, gatewayProof(capability.tokenHash, "gateway", given.nonce, given.challenge));
    return true;
  }

  /** Who may connect: the capability, or the plain HTTP status that refuses the upgrade. */
  private admit(
    req: IncomingMessage,
  ): { capability: Capability } | { status: number; why: string; capability?: Capability } {
    const route = routeOf(req.url);
    if (!route) return { status: 404, why: "no such path" };
    if (String(req.headers.upgrade).toLowerCase() !== "websocket")
      return { status: 400, why: "not a websocket upgrade" };
    const token = /^Bearer ([A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? "")?.[1];
    const challenged = parseGatewayAuthorization(req.headers.authorization) !== undefined;
    if (!challenged && (!token || !TOKEN.test(token))) return { status: 401, why: "missing or malformed credentials" };
    const capability = this.capabilities.get(route.id);
    if (!capability || capability.kind !== route.kind) return { status: 404, why: "no such capability" };
    if (
      challenged ? !this.provesToken(req, capability) : !timingSafeEqual(sha256(token as string), capability.tokenHash)
    )
      return { status: 401, why: challenged ? "wrong proof or challenge" : "wrong token", capability };
    if (!capability.ended && Date.now() >= capability.expiresAt) this.end(capability, "expired", false);
    if (!capability.ended && !slotServes(slotRecordNow(this.state, capability.slot), capability.incarnation)) {
      this.end(capability, "desktop-stopped", true);
    }
    if (!capability.ended && capability.control) {
      const control = this.capabilities.get(capability.control.id);
      if (control && !control.ended && Date.now() >= control.expiresAt) this.end(control, "expired", false);
      if (!control || control.ended) this.end(capability, "control-ended", true);
    }
    if (capability.ended) return { status: 410, why: capability.ended, capability };
    if (capability.connections.size >= MAX_CONNECTIONS_PER_CAPABILITY || this.openConnections >= MAX_CONNECTIONS) {
      return { status: 503, why: "too many connections", capability };
    }
    return { capability };
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    if (this.service.handles(req.url)) {
      if (String(req.headers.upgrade).toLowerCase() !== "websocket")
        refuseUpgrade(socket, 400, "not a websocket upgrade");
      else this.service.upgrade(req, socket, head);
      return;
    }
    const refuse = (status: number, why: string, capability?: Capability) => {
      this.log.write("refuse", { cap: capability?.id, mode: capability?.mode, status, why });
      refuseUpgrade(socket, status, why);
    };
    const verdict = this.admit(req);
    if ("status" in verdict) {
      refuse(verdict.status, verdict.why, verdict.capability);
      return;
    }
    const { capability } = verdict;
    const connection = `c${++this.connectionCount}`;
    const upstream = createConnection(capability.socketPath);
    let attached = false;
    socket.once("close", () => {
      if (!attached) upstream.destroy();
    });
    upstream.once("error", () => {
      if (!attached) refuse(503, "the desktop's screen server is unreachable", capability);
    });
    upstream.once("connect", () => {
      if (socket.destroyed || capability.ended) {
        upstream.destroy();
        if (capability.ended) refuse(410, capability.ended, capability);
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        attached = true;
        this.openConnections++;
        const link = bridge(
          ws,
          upstream,
          (why) => {
            capability.connections.delete(connection);
            this.openConnections--;
            this.log.write("close", { cap: capability.id, conn: connection, mode: capability.mode, why });
            if (capability.kind === "terminals" && capability.ended) this.retireIdleTerminalServers();
          },
          capability.kind === "terminals" ? { fromClient: terminalFrameOf, localName: "shell" } : {},
        );
        capability.connections.set(connection, link);
        this.log.write("open", { cap: capability.id, conn: connection, mode: capability.mode, slot: capability.slot });
      });
    });
  }

  /** Once a second: expiry, desktops that stopped or were recycled, forgetting old capabilities, stray x11vnc. */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = Date.now();
      const records = new Map<number, DisplaySlotRecord | undefined>();
      const recordOf = (slot: number) => {
        if (!records.has(slot)) records.set(slot, slotRecordNow(this.state, slot));
        return records.get(slot);
      };
      for (const capability of this.capabilities.values()) {
        if (!capability.ended && now >= capability.expiresAt) this.end(capability, "expired", false);
        if (capability.ended && capability.connections.size === 0) continue;
        if (!slotServes(recordOf(capability.slot), capability.incarnation)) {
          this.end(capability, "desktop-stopped", true);
        }
      }
      const forgettable = [...this.capabilities.values()]
        .filter((c) => c.ended && c.connections.size === 0)
        .sort((a, b) => (a.endedAt ?? 0) - (b.endedAt ?? 0));
      let excess = this.capabilities.size - MAX_REMEMBERED;
      for (const c of forgettable) {
        if (excess > 0 || now - (c.endedAt ?? 0) > KEEP_ENDED_MS) {
          this.capabilities.delete(c.id);
          excess--;
        }
      }
      this.retireIdleTerminalServers();
      await this.vnc.sweep();
    } catch (error) {
      this.log.write("sweep-failed", { error: (error as Error).message });
    } finally {
      this.sweeping = false;
    }
  }

  shutdown(): void {
    for (const capability of this.capabilities.values()) this.end(capability, "gateway-stopping", true);
  }
}

/** `/screens/<id>` or `/terminals/<id>` exactly: no other prefix, no `..`, no encoded tricks; a query string is ignored. */
function routeOf(url: string | undefined): { kind: Capability["kind"]; id: string } | undefined {
  const path = (url ?? "").split("?")[0] ?? "";
  const match = /^\/(screens|terminals)\/([A-Za-z0-9_-]{22})$/.exec(path);
  return match ? { kind: match[1] as Capability["kind"], id: match[2] as string } : undefined;
}

/** Bytes both ways between a terminal capability's connection and its shell's. */
function pipeBothWays(local: Socket, shell: Socket): void {
  shell.on("error", () => shell.destroy());
  shell.on("close", () => local.destroy());
  local.on("close", () => shell.destroy());
  local.pipe(shell);
  shell.pipe(local);
}

function terminalSessionOf(capability: Capability): TerminalSession {
  return {
    controlId: capability.control?.id as string,
    bot: capability.bot,
    home: capability.home as string,
    display: `:${FIRST_DISPLAY + capability.slot}`,
  };
}

function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      "Connection: close\r\n" +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      (status === 401 ? 'WWW-Authenticate: Bearer realm="screens"\r\n' : "") +
      `\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
}
