import WebSocket from "ws";
import { StepFailure } from "./step-failure.js";

/** What a person's viewer saw when the screen opened. */
export interface ScreenOpened {
  readonly width: number;
  readonly height: number;
}

/**
 * Opens a screen capability's websocket as the noVNC viewer would (the
 * `binary` subprotocol), goes through the RFB 3.8 handshake to the
 * ServerInit (the screen's size), then closes it. That is a person's
 * screen opened and closed, without a browser.
 */
export async function openAndCloseScreen(url: string, op: string, timeoutMs: number): Promise<ScreenOpened> {
  const ws = new WebSocket(url, ["binary"]);
  const reader = new ByteReader(ws, op);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("unexpected-response", (_request, response) =>
        reject(new StepFailure(op, "SCREEN_REFUSED", `the screens proxy answered HTTP ${response.statusCode}`)),
      );
      ws.once("error", (error) => reject(new StepFailure(op, "SCREEN_REFUSED", error.message)));
    });
    const deadline = Date.now() + timeoutMs;
    const banner = (await reader.read(12, deadline)).toString("latin1");
    if (!/^RFB \d{3}\.\d{3}\n$/.test(banner))
      throw new StepFailure(op, "SCREEN_PROTOCOL", `banner ${JSON.stringify(banner)}`);
    ws.send(Buffer.from("RFB 003.008\n"));
    const count = (await reader.read(1, deadline))[0] as number;
    const types = [...(await reader.read(count, deadline))];
    if (!types.includes(1)) throw new StepFailure(op, "SCREEN_PROTOCOL", `no "None" security type among ${types}`);
    ws.send(Buffer.from([1]));
    const result = (await reader.read(4, deadline)).readUInt32BE(0);
    if (result !== 0) throw new StepFailure(op, "SCREEN_PROTOCOL", `security result ${result}`);
    ws.send(Buffer.from([1])); // ClientInit: shared
    const init = await reader.read(24, deadline);
    return { width: init.readUInt16BE(0), height: init.readUInt16BE(2) };
  } finally {
    await close(ws);
  }
}

/** A graceful close, cut short after a second. */
function close(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      ws.terminate();
      resolve();
    }, 1000);
    ws.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    else ws.close(1000);
  });
}

/** Reads exact byte counts off a websocket's binary messages. */
class ByteReader {
  private buffered = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  private ended: string | undefined;

  constructor(
    ws: WebSocket,
    private readonly op: string,
  ) {
    ws.on("message", (data: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, data]);
      this.wake?.();
    });
    ws.on("close", (code) => {
      this.ended = `the screen closed (${code})`;
      this.wake?.();
    });
    ws.on("error", (error) => {
      this.ended = error.message;
      this.wake?.();
    });
  }

  async read(n: number, deadline: number): Promise<Buffer> {
    while (this.buffered.length < n) {
      if (this.ended)
        throw new StepFailure(this.op, "SCREEN_CLOSED", `${this.ended} after ${this.buffered.length} bytes`);
      const left = deadline - Date.now();
      if (left <= 0) throw new StepFailure(this.op, "TIMEOUT", `no RFB handshake within the step's time`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }
}
