import type { Socket } from "node:net";
import type { WebSocket } from "ws";

/** Past this much unsent data to a client, reading from the desktop pauses. */
const HIGH_WATER = 1024 * 1024;
/** Reading resumes once the client has taken it down to this. */
const LOW_WATER = 256 * 1024;
/** A client that takes nothing for this long while data waits is dropped. */
const STALL_MS = 20_000;
/** After a close frame, a client that does not answer is cut off. */
const CLOSE_GRACE_MS = 500;

export interface Bridge {
  /** Ends the connection now: a close frame, then the TCP connection. */
  close(code: number, reason: string): void;
}

export interface BridgeOptions {
  /**
   * Turns one client message into the bytes the local side reads
   * (undefined: nothing to send). Throwing closes only this connection
   * (1007). Without it, every message passes unchanged.
   */
  readonly fromClient?: (data: Buffer, isBinary: boolean) => Buffer | undefined;
  /** Names the local side in close reasons: "desktop" unless told. */
  readonly localName?: string;
}

/**
 * Copies bytes both ways between a websocket (binary frames) and a local
 * stream, with bounded buffers: a slow client pauses the desktop side, a
 * fast client the websocket side, so nothing is buffered without limit and
 * a bad client only ever stalls its own connection. `onClose` runs once.
 */
export function bridge(
  ws: WebSocket,
  upstream: Socket,
  onClose: (why: string) => void,
  options: BridgeOptions = {},
): Bridge {
  const local = options.localName ?? "desktop";
  let closed = false;
  let pausedSince = 0;
  const finish = (why: string) => {
    if (closed) return;
    closed = true;
    clearInterval(watch);
    upstream.destroy();
    onClose(why);
  };
  const close = (code: number, reason: string) => {
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
    finish(reason);
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  };

  const afterSend = () => {
    if (pausedSince && ws.bufferedAmount <= LOW_WATER) {
      pausedSince = 0;
      upstream.resume();
    }
  };
  upstream.on("data", (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(chunk, { binary: true }, afterSend);
    if (!pausedSince && ws.bufferedAmount > HIGH_WATER) {
      pausedSince = Date.now();
      upstream.pause();
    }
  });
  upstream.on("error", () => close(1011, `${local} connection failed`));
  upstream.on("close", () => close(1000, `${local} closed the connection`));

  ws.on("message", (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    let bytes: Buffer | undefined = Buffer.isBuffer(data)
      ? data
      : Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.from(data);
    if (options.fromClient) {
      try {
        bytes = options.fromClient(bytes, isBinary);
      } catch (error) {
        close(1007, (error as Error).message.slice(0, 120));
        return;
      }
      if (!bytes) return;
    }
    if (!upstream.write(bytes)) {
      ws.pause();
      upstream.once("drain", () => {
        if (!closed) ws.resume();
      });
    }
  });
  // Oversized frames (maxPayload), bad framing: only this connection ends.
  // ws sends the close frame (1009 for a frame past maxPayload) itself.
  ws.on("error", () => {
    finish("client error");
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  });
  ws.on("close", (code) => finish(`client closed (${code})`));

  const watch = setInterval(() => {
    if (pausedSince && Date.now() - pausedSince > STALL_MS) {
      finish("client too slow");
      ws.terminate();
    }
  }, 1000);
  watch.unref();
  return { close };
}
