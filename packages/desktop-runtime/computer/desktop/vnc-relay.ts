import { createConnection, type Socket } from "node:net";
import { VNC_AUTH, VNC_CHALLENGE_BYTES, vncAuthResponse } from "./vnc-auth.js";

/** Both handshakes together; a side that stalls past this is dropped (x11vnc does the same to its clients). */
const HANDSHAKE_MS = 30_000;
const RFB_38 = "RFB 003.008\n";
const SECURITY_NONE = 1;
const MAX_REASON_BYTES = 4096;
/** Held during a handshake at most: a viewer may send its first messages early, never this much. */
const MAX_HELD_BYTES = 1024 * 1024;

/** Where a screen capability's connections go: its display's x11vnc in its mode, and that server's password. */
export interface VncTarget {
  readonly port: number;
  readonly password: Buffer;
}

/**
 * Joins a viewer (a connection to a screen capability's Unix socket) to its
 * x11vnc. Toward x11vnc the gateway answers VNC Authentication with the
 * password it alone holds; toward the viewer it speaks what x11vnc spoke
 * before it had a password (RFB 3.8, security type None; 3.7 and 3.3 as
 * x11vnc answers them), so viewers and the screens proxy see no change.
 * After both handshakes the bytes pass unchanged both ways, from the
 * viewer's ClientInit on. Resolves once piping; rejects (both sockets
 * destroyed) when either handshake fails.
 */
export async function relayToVnc(viewer: Socket, target: VncTarget): Promise<void> {
  const server = createConnection({ port: target.port, host: "127.0.0.1" });
  const fromServer = new HandshakeReader(server);
  const fromViewer = new HandshakeReader(viewer);
  const timer = setTimeout(() => {
    server.destroy();
    viewer.destroy();
  }, HANDSHAKE_MS);
  try {
    await authenticate(server, fromServer, target.password);
    await greet(viewer, fromViewer);
  } catch (error) {
    server.destroy();
    viewer.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const early = fromViewer.release();
  const late = fromServer.release();
  if (early.length > 0) server.write(early);
  if (late.length > 0) viewer.write(late);
  server.on("error", () => server.destroy());
  server.on("close", () => viewer.destroy());
  viewer.on("close", () => server.destroy());
  viewer.pipe(server);
  server.pipe(viewer);
}

/** The gateway as x11vnc's client, up to a successful SecurityResult. */
async function authenticate(server: Socket, reader: HandshakeReader, password: Buffer): Promise<void> {
  const version = (await reader.read(12)).toString("latin1");
  if (version !== RFB_38) throw new Error(`the screen server speaks ${JSON.stringify(version)}, not RFB 3.8`);
  server.write(RFB_38);
  const count = (await reader.read(1))[0] as number;
  if (count === 0) throw new Error(`the screen server refused: ${await reason(reader)}`);
  const types = [...(await reader.read(count))];
  if (!types.includes(VNC_AUTH)) throw new Error(`the screen server offers no VNC password (${types.join(", ")})`);
  server.write(Buffer.from([VNC_AUTH]));
  server.write(vncAuthResponse(password, await reader.read(VNC_CHALLENGE_BYTES)));
  if ((await reader.read(4)).readUInt32BE(0) !== 0) {
    throw new Error(`the screen server refused the gateway's password: ${await reason(reader)}`);
  }
}

/** The viewer's handshake as x11vnc without a password answers it, up to (not including) ClientInit. */
async function greet(viewer: Socket, reader: HandshakeReader): Promise<void> {
  viewer.write(RFB_38);
  const version = /^RFB 003\.(\d{3})\n$/.exec((await reader.read(12)).toString("latin1"));
  if (!version) throw new Error("the viewer does not speak RFB 3.x");
  const minor = Number(version[1]);
  if (minor < 7) {
    // 3.3: the server names the one type; no choice, no result.
    viewer.write(u32(SECURITY_NONE));
    return;
  }
  viewer.write(Buffer.from([1, SECURITY_NONE]));
  const chosen = (await reader.read(1))[0];
  if (chosen !== SECURITY_NONE) {
    if (minor >= 8) viewer.write(Buffer.concat([u32(1), stringOf("Only security type None is offered.")]));
    throw new Error(`the viewer chose security type ${chosen}`);
  }
  // 3.7 sends no SecurityResult after None; 3.8 does.
  if (minor >= 8) viewer.write(u32(0));
}

async function reason(reader: HandshakeReader): Promise<string> {
  const length = (await reader.read(4)).readUInt32BE(0);
  return (await reader.read(Math.min(length, MAX_REASON_BYTES))).toString("utf8");
}

const u32 = (n: number) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
};
const stringOf = (text: string) => Buffer.concat([u32(Buffer.byteLength(text)), Buffer.from(text)]);

/** Reads exact byte counts off a socket during a handshake; `release` hands the socket back for piping. */
class HandshakeReader {
  private buffered = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly onData = (chunk: Buffer) => {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    if (this.buffered.length > MAX_HELD_BYTES) this.socket.destroy();
    this.wake?.();
  };
  private readonly onEnd = () => {
    this.ended = true;
    this.wake?.();
  };

  constructor(private readonly socket: Socket) {
    socket.on("data", this.onData);
    socket.on("close", this.onEnd);
    socket.on("end", this.onEnd);
    socket.on("error", this.onEnd);
  }

  async read(n: number): Promise<Buffer> {
    while (this.buffered.length < n) {
      if (this.ended) throw new Error("the connection closed during the handshake");
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }

  /** Stops reading; what arrived beyond the handshake, to be passed on first. */
  release(): Buffer {
    this.socket.pause();
    this.socket.off("data", this.onData);
    this.socket.off("close", this.onEnd);
    this.socket.off("end", this.onEnd);
    this.socket.off("error", this.onEnd);
    return this.buffered;
  }
}
