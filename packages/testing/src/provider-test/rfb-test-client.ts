import { randomBytes } from "node:crypto";
import { request } from "node:http";
import type { ScreenEndpoint } from "@agent-computer/core";
import WebSocket from "ws";

/** How a connection ended, and when (ms since the epoch). */
export interface Closed {
  readonly code: number;
  readonly at: number;
}

/**
 * A minimal RFB client over a screen gateway websocket, enough to check
 * what a noVNC viewer would get: the banner, the no-auth handshake, the
 * ServerInit, and raw client messages.
 */
export class RfbTestClient {
  private buffer = Buffer.alloc(0);
  /** Arrived since the last read: joined once a read needs them, so large frames cost no repeated copies. */
  private arrived: Buffer[] = [];
  private arrivedBytes = 0;
  private wake: (() => void) | undefined;
  readonly closed: Promise<Closed>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.arrived.push(data);
      this.arrivedBytes += data.length;
      this.wake?.();
    });
    this.closed = new Promise((resolve) => ws.on("close", (code) => resolve({ code, at: Date.now() })));
    ws.on("error", () => {});
  }

  /** Opens the websocket as the host side would (bearer token, noVNC's `binary` subprotocol). */
  static open(endpoint: Pick<ScreenEndpoint, "url"> & { token?: string }): Promise<RfbTestClient> {
    return new Promise((resolve, reject) => {
      const headers = endpoint.token === undefined ? {} : { Authorization: `Bearer ${endpoint.token}` };
      const ws = new WebSocket(endpoint.url, ["binary"], { headers });
      const client = new RfbTestClient(ws);
      ws.once("open", () => resolve(client));
      ws.once("unexpected-response", (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
      ws.once("error", reject);
    });
  }

  /** The next `n` bytes the server sent. */
  async read(n: number, timeoutMs = 10_000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.buffer.length + this.arrivedBytes < n) {
      const left = deadline - Date.now();
      if (left <= 0 || this.ws.readyState !== WebSocket.OPEN) {
        const have = this.buffer.length + this.arrivedBytes;
        throw new Error(`expected ${n} bytes, have ${have} (state ${this.ws.readyState})`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    if (this.buffer.length < n) {
      this.buffer = Buffer.concat([this.buffer, ...this.arrived]);
      this.arrived = [];
      this.arrivedBytes = 0;
    }
    const out = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    return out;
  }

  send(bytes: Uint8Array): void {
    this.ws.send(bytes);
  }

  /** RFB 3.8 with security type None and a shared ClientInit; the ServerInit's size and name. */
  async handshake(): Promise<{ banner: string; width: number; height: number; bitsPerPixel: number; name: string }> {
    const banner = (await this.read(12)).toString("latin1");
    this.send(Buffer.from("RFB 003.008\n"));
    const count = (await this.read(1))[0] as number;
    const types = [...(await this.read(count))];
    if (!types.includes(1)) throw new Error(`no "None" security type among ${types}`);
    this.send(Buffer.from([1]));
    const result = (await this.read(4)).readUInt32BE(0);
    if (result !== 0) throw new Error(`security result ${result}`);
    this.send(Buffer.from([1])); // ClientInit: shared
    const init = await this.read(24);
    const name = (await this.read(init.readUInt32BE(20))).toString("utf8");
    return { banner, width: init.readUInt16BE(0), height: init.readUInt16BE(2), bitsPerPixel: init[4] as number, name };
  }

  /** SetEncodings: Raw only, so every update's size follows from its rectangles. */
  useRawEncoding(): void {
    this.send(Buffer.from([2, 0, 0, 1, 0, 0, 0, 0]));
  }

  /** FramebufferUpdateRequest for the whole screen. */
  requestFrame(width: number, height: number, incremental: boolean): void {
    this.send(Buffer.from([3, incremental ? 1 : 0, 0, 0, 0, 0, width >> 8, width & 0xff, height >> 8, height & 0xff]));
  }

  /** Reads server messages up to the end of the next FramebufferUpdate (Raw rectangles); its pixel bytes. */
  async readFrame(bitsPerPixel: number, timeoutMs = 10_000): Promise<number> {
    for (;;) {
      const type = (await this.read(1, timeoutMs))[0];
      if (type === 2) continue; // Bell
      if (type === 3) {
        const length = (await this.read(7, timeoutMs)).readUInt32BE(3); // ServerCutText
        await this.read(length, timeoutMs);
        continue;
      }
      if (type !== 0) throw new Error(`unexpected server message ${type}`);
      const rects = (await this.read(3, timeoutMs)).readUInt16BE(1);
      let bytes = 0;
      for (let i = 0; i < rects; i++) {
        const header = await this.read(12, timeoutMs);
        if (header.readInt32BE(8) !== 0) throw new Error(`unexpected encoding ${header.readInt32BE(8)}`);
        const size = header.readUInt16BE(4) * header.readUInt16BE(6) * (bitsPerPixel / 8);
        await this.read(size, timeoutMs);
        bytes += size;
      }
      return bytes;
    }
  }

  /** FramebufferUpdateRequest for a small corner; resolves with the type byte of the server's next message. */
  async requestUpdate(): Promise<number> {
    this.send(Buffer.from([3, 0, 0, 0, 0, 0, 0, 16, 0, 16]));
    return (await this.read(1))[0] as number;
  }

  pointer(x: number, y: number, buttons = 0): void {
    this.send(Buffer.from([5, buttons, x >> 8, x & 0xff, y >> 8, y & 0xff]));
  }

  close(): void {
    this.ws.close();
  }
}

/** What the gateway answers to an upgrade that is not a websocket capability: status and body. */
export function refusalOf(
  url: string,
  options: { token?: string; path?: string } = {},
): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({
      host: target.hostname,
      port: target.port,
      // Sent as written: no URL normalisation of `..` on the way.
      path: options.path ?? target.pathname,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
        "Sec-WebSocket-Protocol": "binary",
        ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: "" });
    });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}
