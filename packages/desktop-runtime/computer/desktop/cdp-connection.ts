import { randomBytes } from "node:crypto";
import { get, request } from "node:http";
import type { Socket } from "node:net";
import { CliError } from "./cli-error.js";

/**
 * Where a browser's DevTools answers: its port on the computer's loopback,
 * or, with DevTools on a pipe, the Unix socket of its bridge
 * (devtools-pipe-bridge.ts), which serves the same endpoints.
 */
export interface DevtoolsEndpoint {
  readonly cdpPort: number;
  readonly devtoolsSocket?: string;
}

const where = (endpoint: DevtoolsEndpoint) =>
  endpoint.devtoolsSocket ? { socketPath: endpoint.devtoolsSocket } : { host: "127.0.0.1", port: endpoint.cdpPort };

/**
 * Just enough of a WebSocket client to speak the Chrome DevTools Protocol
 * on the computer's loopback: Node 18 (the image's) has no global
 * WebSocket, and in-computer code ships without dependencies.
 */
export class CdpConnection {
  private buffered = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    const fail = () => {
      for (const p of this.pending.values())
        p.reject(new CliError("UNAVAILABLE", "The browser closed its DevTools connection."));
      this.pending.clear();
    };
    socket.on("close", fail);
    socket.on("error", fail);
  }

  /** Connects to `wsUrl`, through the bridge's socket when `endpoint` has one (its URLs name no real host). */
  static open(wsUrl: string, endpoint?: DevtoolsEndpoint, timeoutMs = 5000): Promise<CdpConnection> {
    const url = new URL(wsUrl);
    return new Promise((resolve, reject) => {
      const req = request({
        ...(endpoint?.devtoolsSocket
          ? { socketPath: endpoint.devtoolsSocket }
          : { host: url.hostname, port: url.port }),
        path: url.pathname,
        timeout: timeoutMs,
        headers: {
          Connection: "Upgrade",
          Upgrade: "websocket",
          "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
        },
      });
      req.on("upgrade", (_res, socket) => resolve(new CdpConnection(socket)));
      req.on("timeout", () => req.destroy(new CliError("TIMEOUT", "The browser's DevTools did not answer.")));
      req.on("error", (e) => reject(e instanceof CliError ? e : new CliError("UNAVAILABLE", `DevTools: ${e.message}`)));
      req.on("response", (res) =>
        reject(new CliError("UNAVAILABLE", `DevTools refused the connection (${res.statusCode}).`)),
      );
      req.end();
    });
  }

  call(method: string, params: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<unknown> {
    const id = this.nextId++;
    this.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CliError("TIMEOUT", `The browser did not answer ${method} in ${timeoutMs} ms.`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private send(text: string): void {
    const payload = Buffer.from(text, "utf8");
    const mask = randomBytes(4);
    const length = payload.length;
    const head =
      length < 126
        ? Buffer.from([0x81, 0x80 | length])
        : length < 65536
          ? Buffer.from([0x81, 0x80 | 126, length >> 8, length & 0xff])
          : Buffer.concat([Buffer.from([0x81, 0x80 | 127]), bigLength(length)]);
    // Clients must mask every frame (RFC 6455 §5.3).
    for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i & 3] as number);
    this.socket.write(Buffer.concat([head, mask, payload]));
  }

  private onData(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      const b = this.buffered;
      if (b.length < 2) return;
      const fin = ((b[0] as number) & 0x80) !== 0;
      const opcode = (b[0] as number) & 0x0f;
      let length = (b[1] as number) & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (b.length < 10) return;
        length = Number(b.readBigUInt64BE(2));
        offset = 10;
      }
      if (b.length < offset + length) return;
      const payload = b.subarray(offset, offset + length);
      this.buffered = b.subarray(offset + length);
      if (opcode === 0x8) {
        this.socket.destroy();
        return;
      }
      if (opcode !== 0x1 && opcode !== 0x0) continue; // pings need no answer for short calls
      this.fragments.push(Buffer.from(payload));
      if (!fin) continue;
      const message = Buffer.concat(this.fragments).toString("utf8");
      this.fragments = [];
      this.onMessage(message);
    }
  }

  private onMessage(text: string): void {
    const message = JSON.parse(text) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id === undefined) return;
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(new CliError("UNAVAILABLE", `The browser refused: ${message.error.message}`));
    else waiter.resolve(message.result);
  }
}

function bigLength(length: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(length));
  return b;
}

/** GETs a DevTools HTTP endpoint (/json/version, /json/list) of the browser at `endpoint`. */
export function cdpJson<T>(endpoint: DevtoolsEndpoint, path: string, timeoutMs = 2000): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = get({ ...where(endpoint), path, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as T);
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}
