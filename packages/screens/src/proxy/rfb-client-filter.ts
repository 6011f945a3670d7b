/**
 * Reads the RFB (VNC) byte stream a browser sends, message by message,
 * whatever the websocket framing. In view mode it passes only what watching
 * needs (the handshake, SetPixelFormat, SetEncodings,
 * FramebufferUpdateRequest, EnableContinuousUpdates, Fence) and drops input
 * (KeyEvent, PointerEvent, QEMU key events, ClientCutText) and session
 * changes (SetDesktopSize, xvp shutdown/reboot); anything it cannot size
 * is a violation and the socket closes. Defense in depth: the gateway
 * already serves view capabilities from a `-viewonly` x11vnc.
 *
 * In control mode everything passes untouched; the handshake is only
 * followed to tell when ClientInit went by.
 */
export class RfbClientFilter {
  private phase: "version" | "security" | "vnc-auth" | "client-init" | "messages" | "opaque" = "version";
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes of a dropped message still to come in later chunks. */
  private skip = 0;
  private clientInit = false;

  constructor(private readonly mode: "view" | "control") {}

  /** True once the client's ClientInit (the last handshake message) went by. */
  get clientInitSent(): boolean {
    return this.clientInit;
  }

  /**
   * Feeds the next bytes from the client. `forward` is what to send on
   * (undefined: nothing yet); `dropped` counts bytes held back for good;
   * `violation` says why the socket must close.
   */
  push(chunk: Buffer): { forward: Buffer | undefined; dropped: number; violation?: string } {
    if (this.mode === "control") {
      if (this.phase !== "messages" && this.phase !== "opaque") this.follow(chunk);
      return { forward: chunk, dropped: 0 };
    }
    return this.filter(chunk);
  }

  // Control: follow the handshake on a small buffer, never holding bytes back.
  private follow(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk.subarray(0, 64)]);
    const step = this.handshakeStep();
    while (step() === "next") {}
    if (this.phase === "messages" || this.phase === "opaque") this.pending = Buffer.alloc(0);
  }

  private filter(chunk: Buffer): { forward: Buffer | undefined; dropped: number; violation?: string } {
    let dropped = 0;
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      dropped += n;
      chunk = chunk.subarray(n);
    }
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    const handshake = this.handshakeStep(out);
    for (;;) {
      if (this.phase !== "messages") {
        const result = handshake();
        if (result === "next") continue;
        if (result === "wait") break;
        return { forward: undefined, dropped, violation: result.violation };
      }
      if (this.pending.length === 0) break;
      const type = this.pending[0]!;
      const size = messageSize(type, this.pending);
      if (size === undefined) return { forward: undefined, dropped, violation: `client message type ${type}` };
      if (size === "more") break;
      if (VIEW_ALLOWED.has(type)) {
        if (size > MAX_PASSED_MESSAGE) return { forward: undefined, dropped, violation: "oversized message" };
        if (this.pending.length < size) break;
        out.push(this.take(size));
      } else {
        const n = Math.min(size, this.pending.length);
        this.take(n);
        dropped += n;
        this.skip = size - n;
      }
    }
    return { forward: out.length === 0 ? undefined : Buffer.concat(out), dropped };
  }

  /**
   * One handshake message at a time: "next" when one was consumed (into
   * `out` in view mode), "wait" for more bytes, or a violation.
   */
  private handshakeStep(out?: Buffer[]): () => "next" | "wait" | { violation: string } {
    const give = (n: number) => {
      const bytes = this.take(n);
      out?.push(bytes);
    };
    const refuse = (violation: string) => {
      if (this.mode === "control") {
        this.phase = "opaque";
        return "wait" as const;
      }
      return { violation };
    };
    return () => {
      switch (this.phase) {
        case "version": {
          if (this.pending.length < 12) return "wait";
          const version = this.pending.subarray(0, 12).toString("latin1");
          if (!/^RFB 003\.00[78]\n$/.test(version)) return refuse("protocol version");
          give(12);
          this.phase = "security";
          return "next";
        }
        case "security": {
          if (this.pending.length < 1) return "wait";
          const type = this.pending[0];
          if (type !== 1 && type !== 2) return refuse(`security type ${type}`);
          give(1);
          this.phase = type === 2 ? "vnc-auth" : "client-init";
          return "next";
        }
        case "vnc-auth":
          if (this.pending.length < 16) return "wait";
          give(16);
          this.phase = "client-init";
          return "next";
        case "client-init":
          if (this.pending.length < 1) return "wait";
          give(1);
          this.phase = "messages";
          this.clientInit = true;
          return "next";
        default:
          return "wait";
      }
    };
  }

  private take(n: number): Buffer {
    const bytes = this.pending.subarray(0, n);
    this.pending = this.pending.subarray(n);
    return bytes;
  }
}

// SetPixelFormat, SetEncodings, FramebufferUpdateRequest, EnableContinuousUpdates, Fence.
const VIEW_ALLOWED = new Set([0, 2, 3, 150, 250]);

// SetEncodings with every one of 65535 encodings is the largest message passed.
const MAX_PASSED_MESSAGE = 4 + 4 * 0xffff;

/**
 * The whole size of the client message starting `bytes`, "more" when its
 * header is not all there yet, undefined for a type this filter cannot size.
 */
function messageSize(type: number, bytes: Buffer): number | "more" | undefined {
  switch (type) {
    case 0: // SetPixelFormat
      return 20;
    case 2: // SetEncodings
      return bytes.length < 4 ? "more" : 4 + 4 * bytes.readUInt16BE(2);
    case 3: // FramebufferUpdateRequest
      return 10;
    case 4: // KeyEvent
      return 8;
    case 5: // PointerEvent
      return 6;
    case 6: // ClientCutText; a negative length is the extended clipboard format
      return bytes.length < 8 ? "more" : 8 + Math.abs(bytes.readInt32BE(4));
    case 150: // EnableContinuousUpdates
      return 10;
    case 248: // QEMU client message: only the extended key event is sized
      if (bytes.length < 2) return "more";
      return bytes[1] === 0 ? 12 : undefined;
    case 250: // Fence
      return bytes.length < 9 ? "more" : 9 + bytes[8]!;
    case 251: // SetDesktopSize
      return bytes.length < 8 ? "more" : 8 + 16 * bytes[6]!;
    case 252: // xvp (shutdown, reboot, reset)
      return 4;
    default:
      return undefined;
  }
}
