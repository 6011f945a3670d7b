import type { DesktopAction } from "@agent-computer/core";
import type { WebSocket } from "ws";

/** The fake desktop as a screen server sees it. */
export interface FakeScreenSource {
  readonly width: number;
  readonly height: number;
  readonly name: string;
  /** The screen as RGB, 3 bytes a pixel, row by row. */
  pixels(): Uint8Array;
  /** A person's input (control capabilities only). */
  input(actions: DesktopAction[]): Promise<void>;
}

interface PixelFormat {
  bitsPerPixel: number;
  bigEndian: boolean;
  shifts: [number, number, number];
}

/** How long an incremental update request waits for a change before it is answered anyway. */
const QUIET_UPDATE_MS = 2000;
const POLL_MS = 100;

/**
 * RFB 3.8 (RFC 6143) over a websocket, enough for noVNC and the test
 * clients: security type None, ServerInit at the desktop's size, Raw
 * rectangles of the whole screen in the client's 32-bit true-colour format,
 * an incremental request answered when the screen changed (or after a
 * quiet while), and for control only, pointer and key events turned into
 * the desktop's own actions. A view capability drops every input event.
 */
export function serveRfb(socket: WebSocket, source: FakeScreenSource, mode: "view" | "control"): void {
  let buffer = Buffer.alloc(0);
  let stage: "version" | "security" | "init" | "messages" = "version";
  let format: PixelFormat = { bitsPerPixel: 32, bigEndian: false, shifts: [16, 8, 0] };
  let lastSent: Buffer | undefined;
  let buttons = 0;
  let inputs = Promise.resolve();
  let closed = false;
  socket.on("close", () => {
    closed = true;
  });
  const send = (bytes: Buffer) => {
    if (!closed) socket.send(bytes);
  };
  const act = (actions: DesktopAction[]) => {
    if (mode !== "control") return;
    // One after another, as the person made them; a refused action drops only itself.
    inputs = inputs.then(() => source.input(actions).catch(() => {}));
  };

  const update = async (incremental: boolean) => {
    const started = Date.now();
    let pixels = Buffer.from(source.pixels());
    while (incremental && lastSent?.equals(pixels) && Date.now() - started < QUIET_UPDATE_MS && !closed) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      pixels = Buffer.from(source.pixels());
    }
    lastSent = pixels;
    send(Buffer.concat([updateHeader(source.width, source.height), encode(pixels, format)]));
  };

  /** One client message, when it arrived whole; false to wait for more bytes. */
  const message = (): boolean => {
    const type = buffer[0];
    const take = (n: number) => {
      if (buffer.length < n) return undefined;
      const out = buffer.subarray(0, n);
      buffer = buffer.subarray(n);
      return out;
    };
    if (type === 0) {
      const m = take(20);
      if (!m) return false;
      format = { bitsPerPixel: m[4] as number, bigEndian: m[6] !== 0, shifts: [m[14], m[15], m[16]] as never };
      if (format.bitsPerPixel !== 32 || m[7] === 0) socket.close(1003, "only 32-bit true colour");
    } else if (type === 2) {
      if (buffer.length < 4) return false;
      if (!take(4 + 4 * buffer.readUInt16BE(2))) return false;
    } else if (type === 3) {
      const m = take(10);
      if (!m) return false;
      void update(m[1] === 1);
    } else if (type === 4) {
      const m = take(8);
      if (!m) return false;
      const key = keyOf(m.readUInt32BE(4));
      if (m[1] === 1 && key) act([key]);
    } else if (type === 5) {
      const m = take(6);
      if (!m) return false;
      const [mask, x, y] = [m[1] as number, m.readUInt16BE(2), m.readUInt16BE(4)];
      const inside = { x: Math.min(x, source.width - 1), y: Math.min(y, source.height - 1) };
      act([(buttons & 1) === 0 && (mask & 1) === 1 ? { type: "click", ...inside } : { type: "move", ...inside }]);
      buttons = mask;
    } else if (type === 6) {
      if (buffer.length < 8 || !take(8 + buffer.readUInt32BE(4))) return false;
    } else {
      socket.close(1002, `unknown RFB message ${type}`);
      return false;
    }
    return true;
  };

  socket.on("message", (data: Buffer) => {
    buffer = Buffer.concat([buffer, data]);
    if (stage === "version" && buffer.length >= 12) {
      buffer = buffer.subarray(12);
      stage = "security";
      send(Buffer.from([1, 1])); // one security type: None
    }
    if (stage === "security" && buffer.length >= 1) {
      buffer = buffer.subarray(1);
      stage = "init";
      send(Buffer.from([0, 0, 0, 0])); // SecurityResult: OK
    }
    if (stage === "init" && buffer.length >= 1) {
      buffer = buffer.subarray(1);
      stage = "messages";
      send(serverInit(source));
    }
    while (stage === "messages" && buffer.length > 0 && message()) {}
  });
  send(Buffer.from("RFB 003.008\n", "latin1"));
}

function serverInit(source: FakeScreenSource): Buffer {
  const name = Buffer.from(source.name, "utf8");
  const init = Buffer.alloc(24);
  init.writeUInt16BE(source.width, 0);
  init.writeUInt16BE(source.height, 2);
  // 32 bits a pixel, depth 24, little-endian, true colour, 255 a channel, red at 16, green 8, blue 0.
  Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0]).copy(init, 4);
  init.writeUInt32BE(name.length, 20);
  return Buffer.concat([init, name]);
}

function updateHeader(width: number, height: number): Buffer {
  const header = Buffer.alloc(16);
  header[0] = 0; // FramebufferUpdate
  header.writeUInt16BE(1, 2); // one rectangle
  header.writeUInt16BE(width, 8);
  header.writeUInt16BE(height, 10);
  header.writeInt32BE(0, 12); // Raw
  return header;
}

function encode(rgb: Buffer, format: PixelFormat): Buffer {
  const out = Buffer.alloc((rgb.length / 3) * 4);
  const [r, g, b] = format.shifts;
  for (let i = 0, o = 0; i < rgb.length; i += 3, o += 4) {
    const value = (((rgb[i] as number) << r) | ((rgb[i + 1] as number) << g) | ((rgb[i + 2] as number) << b)) >>> 0;
    if (format.bigEndian) out.writeUInt32BE(value, o);
    else out.writeUInt32LE(value, o);
  }
  return out;
}

/** A keysym as the desktop's action: printable ASCII typed, a few named keys pressed; others dropped. */
function keyOf(keysym: number): DesktopAction | undefined {
  if (keysym >= 0x20 && keysym <= 0x7e) return { type: "type", text: String.fromCharCode(keysym) };
  const named: Record<number, string> = { 65293: "Return", 65288: "BackSpace", 65289: "Tab", 65307: "Escape" };
  const key = named[keysym];
  return key ? { type: "key", keys: key } : undefined;
}
