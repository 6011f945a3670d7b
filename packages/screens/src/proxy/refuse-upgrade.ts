import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/** Answers a websocket upgrade with a plain HTTP status and closes the socket. */
export function refuseUpgrade(socket: Duplex, status: number): void {
  if (socket.destroyed) return;
  const body = `${STATUS_CODES[status] ?? "Refused"}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Refused"}\r\n` +
      "Connection: close\r\n" +
      "Cache-Control: no-store, no-transform\r\n" +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // A peer that never reads must not hold the socket open.
  setTimeout(() => socket.destroy(), 1000).unref();
}
