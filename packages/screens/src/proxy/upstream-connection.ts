import type { Duplex } from "node:stream";
import { WebSocket } from "ws";
import type { SealedCapability } from "../capability/sealed-capability.js";
import type { BridgeFrame } from "./screen-bridge.js";

/** A websocket to the gateway, while and after it connects. */
export interface UpstreamConnection {
  /** The gateway socket, there at once so an abort can terminate it mid-connect. */
  readonly ws: WebSocket;
  /** Gateway frames that arrive before the browser's upgrade finishes. */
  readonly early: BridgeFrame[];
  /** Open; or not: the gateway's HTTP status when it answered one, and whether the browser left first. */
  readonly connected: Promise<{ ok: true } | { ok: false; status: number | null; clientGone: boolean }>;
}

/** Connects to a capability's gateway endpoint for the browser on `socket`, which may leave meanwhile. */
export function connectUpstream(
  endpoint: SealedCapability["endpoint"],
  socket: Duplex,
  timeoutMs: number,
): UpstreamConnection {
  const early: BridgeFrame[] = [];
  const ws = new WebSocket(endpoint.url, {
    headers: { Authorization: `Bearer ${endpoint.token}` },
    perMessageDeflate: false,
    followRedirects: false,
    handshakeTimeout: timeoutMs,
    maxPayload: 64 * 1024 * 1024,
  });
  const connected = new Promise<Awaited<UpstreamConnection["connected"]>>((resolve) => {
    let status: number | null = null;
    const onClientGone = () => {
      ws.terminate();
      resolve({ ok: false, status: null, clientGone: true });
    };
    socket.once("close", onClientGone);
    ws.on("message", (data, binary) =>
      early.push({ data: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), binary }),
    );
    ws.once("unexpected-response", (_req, res) => {
      status = res.statusCode ?? null;
      res.resume();
      ws.terminate();
    });
    ws.once("open", () => {
      socket.off("close", onClientGone);
      resolve({ ok: true });
    });
    ws.on("error", () => {});
    ws.once("close", () => {
      socket.off("close", onClientGone);
      resolve({ ok: false, status, clientGone: false });
    });
  });
  return { ws, early, connected };
}
