import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import {
  AgentComputerError,
  capabilityTokenHash,
  GATEWAY_CHALLENGE_HEADER,
  GATEWAY_PROOF_HEADER,
  gatewayChallengeHeader,
  gatewayProof,
  newGatewayNonce,
  parseGatewayAuthorization,
  type ScreenEndpoint,
  type TerminalEndpoint,
} from "@agent-computer/core";
import { type WebSocket, WebSocketServer } from "ws";

/** What a capability serves once its socket is open. */
export type FakeGatewayServe = (socket: WebSocket) => void;

interface Grant {
  readonly endpoint: { readonly id: string; readonly token: string; readonly expiresAt: number };
  readonly serve: FakeGatewayServe;
  /** A terminal lives under a control capability and ends with it. */
  readonly parent?: string;
  ended: boolean;
  readonly sockets: Set<WebSocket>;
}

const DEFAULT_TTL_MS = 10 * 60_000;

/**
 * The fake provider's screen gateway (docs/architecture.md §7, as the
 * in-computer gateway answers): one loopback HTTP server per provider,
 * started on first use, that admits a websocket to `/screens/<id>` or
 * `/terminals/<id>` with the capability's token, proven against a
 * single-use challenge (core's gateway-proof.ts) or sent as a bearer
 * token; 401 for a wrong one, 404 for an unknown id, 410 once revoked or
 * expired. What each socket carries is the caller's (fake-rfb.ts,
 * fake-shell.ts). So an app's tests drive screens and terminals through
 * sealed capabilities and the screens proxy with no engine at all.
 */
export class FakeGateway {
  private server: Server | undefined;
  private starting: Promise<number> | undefined;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private readonly grants = new Map<string, Grant>();
  private readonly challenges = new Set<string>();
  /** The gateway's half of the proof, per upgrade request, for its 101 answer. */
  private readonly proofs = new WeakMap<IncomingMessage, string>();

  constructor() {
    this.wss.on("headers", (headers, req) => {
      const proof = this.proofs.get(req);
      if (proof) headers.push(`${GATEWAY_PROOF_HEADER}: ${proof}`);
    });
  }

  /** A view or control capability served by `serve`. */
  async screen(mode: "view" | "control", serve: FakeGatewayServe, ttlMs?: number): Promise<ScreenEndpoint> {
    const grant = await this.grant("screens", serve, ttlMs);
    return { mode, id: grant.id, url: grant.url, token: grant.endpoint.token, expiresAt: grant.endpoint.expiresAt };
  }

  /**
   * A terminal capability under the control capability `controlId` (or one
   * of its own), ending with it. FENCED_OUT for a control capability that
   * is not live, NOT_FOUND for an unknown one, as the real gateway answers.
   */
  async terminal(serve: FakeGatewayServe, ttlMs?: number, controlId?: string): Promise<TerminalEndpoint> {
    if (controlId !== undefined) {
      const control = this.grants.get(controlId);
      if (!control) throw new AgentComputerError("NOT_FOUND", `No screen capability ${controlId}.`);
      if (this.ended(control)) throw new AgentComputerError("FENCED_OUT", "That control capability has ended.");
    }
    const grant = await this.grant("terminals", serve, ttlMs, controlId);
    return { id: grant.id, url: grant.url, token: grant.endpoint.token, expiresAt: grant.endpoint.expiresAt };
  }

  /** Ends a capability (and the terminals under it): its sockets close, it is refused from then on. */
  revoke(id: string, code = 1008): void {
    const grant = this.grants.get(id);
    if (!grant || grant.ended) return;
    grant.ended = true;
    for (const socket of grant.sockets) socket.close(code, "revoked");
    for (const [childId, child] of this.grants) if (child.parent === id) this.revoke(childId, code);
  }

  /** Ends every capability whose id `belongs` says (a released desktop's). */
  revokeAll(belongs: (id: string) => boolean, code = 1001): void {
    for (const id of this.grants.keys()) if (belongs(id)) this.revoke(id, code);
  }

  async close(): Promise<void> {
    for (const id of this.grants.keys()) this.revoke(id, 1001);
    const server = this.server;
    this.server = undefined;
    this.starting = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async grant(route: "screens" | "terminals", serve: FakeGatewayServe, ttlMs?: number, parent?: string) {
    const port = await this.listening();
    const id = `${route === "screens" ? "fs" : "ft"}-${randomBytes(12).toString("base64url")}`;
    const endpoint = {
      id,
      token: randomBytes(32).toString("base64url"),
      expiresAt: Date.now() + (ttlMs ?? DEFAULT_TTL_MS),
    };
    this.grants.set(id, { endpoint, serve, ended: false, sockets: new Set(), ...(parent ? { parent } : {}) });
    return { id, url: `ws://127.0.0.1:${port}/${route}/${id}`, endpoint };
  }

  private ended(grant: Grant): boolean {
    return grant.ended || Date.now() >= grant.endpoint.expiresAt;
  }

  private listening(): Promise<number> {
    this.starting ??= new Promise<number>((resolve, reject) => {
      const server = createServer((req, res) => {
        // Step 1 of the proof: a single-use challenge.
        if (req.headers[GATEWAY_CHALLENGE_HEADER] === undefined) return void res.writeHead(404).end();
        const challenge = newGatewayNonce();
        this.challenges.add(challenge);
        res.writeHead(401, { "WWW-Authenticate": gatewayChallengeHeader(challenge) }).end();
      });
      server.on("upgrade", (req, socket, head) => this.upgrade(req, socket, head));
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
      server.unref();
      this.server = server;
    });
    return this.starting;
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const refuse = (status: number) => {
      socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    const id = /^\/(?:screens|terminals)\/([A-Za-z0-9_-]+)$/.exec(req.url ?? "")?.[1];
    const grant = id === undefined ? undefined : this.grants.get(id);
    if (!grant) return refuse(404);
    const hash = capabilityTokenHash(grant.endpoint.token);
    const given = parseGatewayAuthorization(req.headers.authorization);
    if (given && this.challenges.delete(given.challenge)) {
      if (given.proof !== gatewayProof(hash, "client", given.challenge, given.nonce)) return refuse(401);
      this.proofs.set(req, gatewayProof(hash, "gateway", given.nonce, given.challenge));
    } else if (req.headers.authorization !== `Bearer ${grant.endpoint.token}`) return refuse(401);
    const parent = grant.parent === undefined ? undefined : this.grants.get(grant.parent);
    if (this.ended(grant) || (parent && this.ended(parent))) return refuse(410);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      grant.sockets.add(ws);
      ws.on("close", () => grant.sockets.delete(ws));
      ws.on("error", () => ws.terminate());
      grant.serve(ws);
    });
  }
}
