import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
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

/**
 * Stands in for the in-computer screen gateway (desktop-runtime has its own
 * container tests for the real one): a real `ws` server on 127.0.0.1 that
 * refuses before the upgrade (401 wrong bearer token, 404 unknown id, 410
 * revoked or expired). At `/screens/<id>` it speaks just enough RFB: it
 * sends the ProtocolVersion at once, records every byte the proxy sends,
 * and can stream bytes back. At `/terminals/<id>` it is an echoing shell:
 * a binary prompt `fake-shell$ ` at once, every binary frame echoed as
 * binary, and a text `{"type":"resize","cols":C,"rows":R}` answered with
 * the binary frame `resized CxR`. A terminal granted under a control
 * endpoint ends with it, as in the real gateway. Clients prove their token
 * against a challenge (core's gateway-proof.ts) or send it as a bearer
 * token; `impostor = true` makes it a process that took the port: it
 * hands out challenges and accepts upgrades but cannot prove anything.
 */
export class FakeGateway {
  readonly connections: GatewayConnection[] = [];
  readonly revoked: string[] = [];
  private readonly endpoints = new Map<string, ScreenEndpoint>();
  /** Terminal endpoints, with the control endpoint each lives under. */
  private readonly terminals = new Map<string, { endpoint: TerminalEndpoint; controlId: string }>();
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private port = 0;
  /** Challenges given out, and how each upgrade was authorised. */
  private readonly challenges = new Set<string>();
  readonly authorizations: ("bearer" | "proof")[] = [];
  /** What an impostor received: the upgrade's Authorization and any frame. */
  readonly impostorHeard: string[] = [];
  /** A process that took the port: it answers, but has no capability to prove. */
  impostor = false;

  constructor() {
    this.server = createServer((req, res) => {
      if (req.headers[GATEWAY_CHALLENGE_HEADER] !== undefined) {
        const challenge = newGatewayNonce();
        this.challenges.add(challenge);
        res.writeHead(401, { "WWW-Authenticate": gatewayChallengeHeader(challenge) });
        res.end();
        return;
      }
      res.writeHead(404);
      res.end();
    });
    const proofs = new WeakMap<object, string>();
    this.wss.on("headers", (headers, req) => {
      const proof = proofs.get(req);
      if (proof) headers.push(`${GATEWAY_PROOF_HEADER}: ${proof}`);
    });
    this.server.on("upgrade", (req, socket, head) => {
      const [, route, id] = /^\/(screens|terminals)\/([^/?]+)$/.exec(req.url ?? "") ?? [];
      const terminal = route === "terminals" && id !== undefined ? this.terminals.get(id) : undefined;
      const endpoint: TerminalEndpoint | undefined =
        route === "screens" && id !== undefined ? this.endpoints.get(id) : terminal?.endpoint;
      const refuse = (status: number) => {
        socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      };
      if (!endpoint && !this.impostor) return refuse(404);
      const given = parseGatewayAuthorization(req.headers.authorization);
      if (this.impostor) {
        // It cannot compute the gateway's proof: it answers with one made of nothing.
        proofs.set(req, "x".repeat(43));
      } else if (given && this.challenges.delete(given.challenge) && endpoint) {
        const hash = capabilityTokenHash(endpoint.token);
        if (given.proof !== gatewayProof(hash, "client", given.challenge, given.nonce)) return refuse(401);
        proofs.set(req, gatewayProof(hash, "gateway", given.nonce, given.challenge));
        this.authorizations.push("proof");
      } else if (endpoint && req.headers.authorization === `Bearer ${endpoint.token}`) {
        this.authorizations.push("bearer");
      } else return refuse(401);
      if (this.impostor) {
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          this.impostorHeard.push(req.headers.authorization ?? "");
          ws.on("message", (data) => this.impostorHeard.push(String(data)));
        });
        return;
      }
      if (!endpoint) return refuse(404);
      if (this.ended(endpoint.id) || (terminal && this.ended(terminal.controlId))) return refuse(410);
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const connection = new GatewayConnection(endpoint, ws, terminal?.controlId);
        this.connections.push(connection);
        if (terminal) connection.echo();
        else ws.send(Buffer.from("RFB 003.008\n", "latin1"));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** The host:port a leak test looks for. */
  get hostPort(): string {
    return `127.0.0.1:${this.port}`;
  }

  endpoint(mode: "view" | "control", ttlMs = 60_000): ScreenEndpoint {
    const id = `ep-${randomUUID()}`;
    const endpoint: ScreenEndpoint = {
      mode,
      id,
      url: `ws://127.0.0.1:${this.port}/screens/${id}`,
      token: `tok-${randomBytes(16).toString("hex")}`,
      expiresAt: Date.now() + ttlMs,
    };
    this.endpoints.set(id, endpoint);
    return endpoint;
  }

  /**
   * A terminal endpoint under the control endpoint `controlId`, or under a
   * control endpoint of its own. FENCED_OUT for a control endpoint that is
   * not live, NOT_FOUND for an unknown one, as desktop-runtime answers.
   */
  terminalEndpoint(ttlMs = 60_000, controlId?: string): TerminalEndpoint {
    if (controlId !== undefined) {
      const control = this.endpoints.get(controlId);
      if (!control) throw new AgentComputerError("NOT_FOUND", "no such control endpoint");
      if (control.mode !== "control" || this.ended(controlId))
        throw new AgentComputerError("FENCED_OUT", "not a live control endpoint");
    }
    const parent = controlId ?? this.endpoint("control", ttlMs).id;
    const id = `tm-${randomUUID()}`;
    const endpoint: TerminalEndpoint = {
      id,
      url: `ws://127.0.0.1:${this.port}/terminals/${id}`,
      token: `tok-${randomBytes(16).toString("hex")}`,
      expiresAt: Date.now() + ttlMs,
    };
    this.terminals.set(id, { endpoint, controlId: parent });
    return endpoint;
  }

  /** Ends an endpoint: its connections, and a control endpoint's terminals, close. */
  revoke(id: string): void {
    this.revoked.push(id);
    for (const connection of this.connections)
      if (connection.endpoint.id === id || connection.controlId === id) connection.socket.close(1000);
  }

  private ended(id: string): boolean {
    const endpoint = this.endpoints.get(id) ?? this.terminals.get(id)?.endpoint;
    return this.revoked.includes(id) || !endpoint || Date.now() >= endpoint.expiresAt;
  }

  /** Resolves with the next connection the gateway accepts. */
  async nextConnection(after = this.connections.length): Promise<GatewayConnection> {
    for (let i = 0; i < 500; i++) {
      const connection = this.connections[after];
      if (connection) return connection;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error("the gateway got no connection");
  }

  async stop(): Promise<void> {
    for (const connection of this.connections) connection.socket.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export class GatewayConnection {
  readonly received: Buffer[] = [];
  /** Every frame, with its type (binary or text). */
  readonly frames: { data: Buffer; binary: boolean }[] = [];
  readonly closed: Promise<number>;
  closedAt: number | undefined;

  constructor(
    readonly endpoint: TerminalEndpoint,
    readonly socket: WebSocket,
    /** For a terminal: the control endpoint it lives under. */
    readonly controlId?: string,
  ) {
    socket.on("message", (data, binary) => {
      this.received.push(data as Buffer);
      this.frames.push({ data: data as Buffer, binary });
    });
    this.closed = new Promise((resolve) =>
      socket.on("close", (code) => {
        this.closedAt = performance.now();
        resolve(code);
      }),
    );
  }

  get bytes(): Buffer {
    return Buffer.concat(this.received);
  }

  /** The terminal behaviour: prompt, echo binary, answer resize. */
  echo(): void {
    this.socket.send(Buffer.from("fake-shell$ "), { binary: true });
    this.socket.on("message", (data, binary) => {
      if (binary) {
        this.socket.send(data as Buffer, { binary: true });
        return;
      }
      const control = JSON.parse((data as Buffer).toString("utf8")) as { type: string; cols: number; rows: number };
      if (control.type === "resize")
        this.socket.send(Buffer.from(`resized ${control.cols}x${control.rows}`), { binary: true });
    });
  }

  /** Sends `total` bytes in `chunk`-sized frames, waiting while its own queue is long. */
  async stream(total: number, chunk = 64 * 1024): Promise<void> {
    const frame = Buffer.alloc(chunk, 7);
    for (let sent = 0; sent < total && this.socket.readyState === this.socket.OPEN; sent += chunk) {
      this.socket.send(frame);
      while (this.socket.bufferedAmount > 8 * 1024 * 1024 && this.socket.readyState === this.socket.OPEN)
        await new Promise((r) => setTimeout(r, 5));
    }
  }
}
