import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ScreenEndpoint } from "@agent-computer/core";
import { type WebSocket, WebSocketServer } from "ws";

/**
 * Stands in for the in-computer screen gateway (desktop-runtime has its own
 * container tests for the real one): a real `ws` server on 127.0.0.1 that
 * refuses before the upgrade (401 wrong bearer token, 404 unknown id, 410
 * revoked or expired) and then speaks just enough RFB: it sends the
 * ProtocolVersion at once, records every byte the proxy sends, and can
 * stream bytes back.
 */
export class FakeGateway {
  readonly connections: GatewayConnection[] = [];
  readonly revoked: string[] = [];
  private readonly endpoints = new Map<string, ScreenEndpoint>();
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private port = 0;

  constructor() {
    this.server = createServer((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    this.server.on("upgrade", (req, socket, head) => {
      const id = /^\/screens\/([^/?]+)$/.exec(req.url ?? "")?.[1];
      const endpoint = id === undefined ? undefined : this.endpoints.get(id);
      const refuse = (status: number) => {
        socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      };
      if (!endpoint) return refuse(404);
      if (req.headers.authorization !== `Bearer ${endpoint.token}`) return refuse(401);
      if (this.revoked.includes(endpoint.id) || Date.now() >= endpoint.expiresAt) return refuse(410);
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const connection = new GatewayConnection(endpoint, ws);
        this.connections.push(connection);
        ws.send(Buffer.from("RFB 003.008\n", "latin1"));
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

  revoke(id: string): void {
    this.revoked.push(id);
    for (const connection of this.connections) if (connection.endpoint.id === id) connection.socket.close(1000);
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
  readonly closed: Promise<number>;
  closedAt: number | undefined;

  constructor(
    readonly endpoint: ScreenEndpoint,
    readonly socket: WebSocket,
  ) {
    socket.on("message", (data) => this.received.push(data as Buffer));
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
