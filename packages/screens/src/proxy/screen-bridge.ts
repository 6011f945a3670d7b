import type { RawData, WebSocket } from "ws";
import type { SealedCapability } from "../capability/sealed-capability.js";
import { RfbClientFilter } from "./rfb-client-filter.js";

/** Who ended a bridged socket. */
export type BridgeCloser = "client" | "upstream" | "revoked" | "proxy";

/** How long a side gets to finish the closing handshake before it is cut. */
const CLOSE_GRACE_MS = 500;

/** A websocket message: its bytes and whether it came as a binary (or a text) frame. */
export interface BridgeFrame {
  readonly data: Buffer;
  readonly binary: boolean;
}

/**
 * One browser socket joined to its own gateway socket: frames both ways,
 * each direction paused while the other side has more than
 * `maxBufferedBytes` queued, so a slow browser holds back only its own
 * stream. Ends both sides together.
 *
 * A screen's RFB bytes go up through the RFB filter and always travel as
 * binary frames; a terminal's frames pass untouched both ways, each keeping
 * its type (binary: terminal bytes; text: JSON control such as resize).
 */
export class ScreenBridge {
  readonly startedAt = performance.now();
  /** Set while an authority check of this socket runs. */
  checking = false;
  /** When the authority last allowed this socket (monotonic ms). */
  lastAllowedAt = performance.now();
  /** Undefined for a terminal: its frames pass as they are. */
  private readonly filter: RfbClientFilter | undefined;
  private closed = false;
  private serverAnswered = false;
  private dropped = 0;
  private pendingCloser: { closer: BridgeCloser; code: number } | undefined;

  constructor(
    readonly connectionId: string,
    readonly capability: SealedCapability,
    private readonly client: WebSocket,
    private readonly upstream: WebSocket,
    private readonly maxBufferedBytes: number,
    private readonly onClosed: (
      bridge: ScreenBridge,
      result: { closer: BridgeCloser; code: number; handshakeCompleted: boolean; droppedClientBytes: number },
    ) => void,
    private readonly onError: (bridge: ScreenBridge, side: "client" | "upstream", code: string) => void = () => {},
  ) {
    this.filter = capability.mode === "terminal" ? undefined : new RfbClientFilter(capability.mode);
  }

  /** Starts relaying; `early` are gateway frames that arrived before the browser's upgrade finished. */
  start(early: BridgeFrame[]): void {
    const { client, upstream } = this;
    for (const frame of early) this.toClient(frame.data, frame.binary);
    upstream.on("message", (data, binary) => this.toClient(bufferOf(data), binary));
    client.on("message", (data, binary) => this.toUpstream(bufferOf(data), binary));
    client.on("error", (error: Error & { code?: string }) => {
      this.onError(this, "client", error.code ?? "unknown");
      // ws closes the socket itself (1009 for an oversized frame, 1002 for a
      // protocol error): the proxy ended it, because of this client.
      this.pendingCloser ??= {
        closer: "proxy",
        code: error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" ? 1009 : 1002,
      };
    });
    upstream.on("error", (error: Error & { code?: string }) => this.onError(this, "upstream", error.code ?? "unknown"));
    client.on("close", (code) => {
      const ended = this.pendingCloser ?? { closer: "client" as const, code };
      this.finish(ended.closer, ended.code);
    });
    upstream.on("close", (code) => this.finish("upstream", sendable(code) ? code : 1011));
  }

  /** Closes both sides, reporting `closer`; `code` and `reason` go to the browser. */
  close(closer: BridgeCloser, code: number, reason: string): void {
    this.finish(closer, code, reason);
  }

  private toClient(chunk: Buffer, binary: boolean): void {
    if (this.closed) return;
    if (!this.filter || this.filter.clientInitSent) this.serverAnswered = true;
    this.relay(this.upstream, this.client, chunk, binary || this.filter !== undefined);
  }

  private toUpstream(chunk: Buffer, binary: boolean): void {
    if (this.closed) return;
    if (!this.filter) {
      this.relay(this.client, this.upstream, chunk, binary);
      return;
    }
    const { forward, dropped, violation } = this.filter.push(chunk);
    this.dropped += dropped;
    if (violation !== undefined) {
      this.close("proxy", 1008, "view only");
      return;
    }
    if (forward) this.relay(this.client, this.upstream, forward, true);
  }

  /** Sends on, pausing `source` while `receiver` has too much queued. */
  private relay(source: WebSocket, receiver: WebSocket, data: Buffer, binary: boolean): void {
    receiver.send(data, { binary }, () => this.resumeIfDrained(receiver, source));
    if (receiver.bufferedAmount > this.maxBufferedBytes) source.pause();
  }

  private resumeIfDrained(receiver: WebSocket, source: WebSocket): void {
    if (!this.closed && source.isPaused && receiver.bufferedAmount <= this.maxBufferedBytes / 2) source.resume();
  }

  private finish(closer: BridgeCloser, code: number, reason = ""): void {
    if (this.closed) return;
    this.closed = true;
    // Whichever side is still open follows: the browser gets the gateway's
    // code when it can be sent on, the gateway a normal close.
    this.closeSocket(this.client, sendable(code) ? code : 1011, reason);
    this.closeSocket(this.upstream, 1000, "");
    this.onClosed(this, {
      closer,
      code,
      handshakeCompleted: this.filter ? this.filter.clientInitSent && this.serverAnswered : this.serverAnswered,
      droppedClientBytes: this.dropped,
    });
  }

  private closeSocket(socket: WebSocket, code: number, reason: string): void {
    if (socket.readyState === socket.CLOSED) return;
    if (socket.readyState === socket.CONNECTING) {
      socket.terminate();
      return;
    }
    if (socket.readyState === socket.OPEN) {
      // A paused socket would never read the peer's closing frame.
      if (socket.isPaused) socket.resume();
      socket.close(code, reason);
    }
    setTimeout(() => {
      if (socket.readyState !== socket.CLOSED) socket.terminate();
    }, CLOSE_GRACE_MS).unref();
  }
}

function bufferOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

// The close codes a websocket may put on the wire (RFC 6455 §7.4).
function sendable(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999)
  );
}
