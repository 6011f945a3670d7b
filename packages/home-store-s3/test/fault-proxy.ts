import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** What the proxy does with one request. */
export type Fault = "pass" | "500" | "slowDown" | "reset" | "stall";

/** A running fault proxy: point an S3 client at `port` instead of the server's. */
export interface FaultProxy {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A reverse proxy in front of a local S3 server that answers each request as
 * `decide` says: passed through, a 500 or 503 SlowDown with S3's XML body, a
 * TCP reset (the client sees a real ECONNRESET or EPIPE), or a stall (the
 * body is never read and nothing is answered, so the client's own request
 * timeout has to fire). Real sockets, so the SDK's retry and timeout code
 * meets the same errors it would meet on a bad network; an interceptor
 * inside node:http (msw) can only raise a TypeError the SDK does not retry.
 * The Host header is kept: SigV4 signed it, and the server checks it.
 */
export async function startFaultProxy(
  targetPort: number,
  decide: (request: IncomingMessage) => Fault,
): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((incoming, outgoing) => {
    const fault = decide(incoming);
    if (fault === "pass") return pass(incoming, outgoing, targetPort);
    if (fault === "reset") return incoming.socket.resetAndDestroy();
    if (fault === "stall") return; // the client gives up; its socket's close ends this one
    const [status, code, message] =
      fault === "500" ? [500, "InternalError", "injected"] : [503, "SlowDown", "Please reduce your request rate."];
    incoming.resume();
    outgoing.writeHead(status, { "content-type": "application/xml" });
    outgoing.end(`<Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function pass(incoming: IncomingMessage, outgoing: ServerResponse, targetPort: number): void {
  const upstream = forward(
    { host: "127.0.0.1", port: targetPort, method: incoming.method, path: incoming.url, headers: incoming.headers },
    (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    },
  );
  upstream.on("error", () => outgoing.destroy());
  outgoing.on("close", () => upstream.destroy());
  incoming.pipe(upstream);
}
