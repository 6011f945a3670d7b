import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { listenLoopback } from "./loopback-servers.js";

/** Where a machine's port is: the container's address, its port and the path to ask for. */
export interface PortTarget {
  host: string;
  port: number;
  /** The path and query sent to the port (default: the request's own). */
  path?: string;
}

/** Forwards one HTTP request to a machine's port and its answer back (502 when the port does not answer). */
export function proxyHttp(req: IncomingMessage, res: ServerResponse, target: PortTarget): void {
  const forward = httpRequest(
    {
      host: target.host,
      port: target.port,
      method: req.method,
      path: target.path ?? req.url,
      headers: { ...req.headers, host: `${target.host}:${target.port}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on("error", () => {
    if (!res.headersSent) res.writeHead(502).end("the machine's port did not answer");
    else res.destroy();
  });
  req.pipe(forward);
}

/**
 * Forwards a websocket (or any) upgrade to a machine's port: the request
 * line and headers as sent (Host rewritten), then bytes both ways. `open`
 * holds the upstream socket while it lives, so closing the emulator ends it.
 */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: PortTarget,
  open?: Set<Socket>,
): void {
  const upstream = connect(target.port, target.host, () => {
    const lines = [`${req.method} ${target.path ?? req.url} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      lines.push(`${name}: ${name.toLowerCase() === "host" ? `${target.host}:${target.port}` : req.rawHeaders[i + 1]}`);
    }
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  open?.add(upstream);
  const end = () => {
    upstream.destroy();
    socket.destroy();
  };
  upstream.once("error", end);
  socket.once("error", end);
  upstream.once("close", () => {
    open?.delete(upstream);
    socket.destroy();
  });
  socket.once("close", () => upstream.destroy());
}

/** Refuses an upgrade with a bare HTTP answer. */
export function refuseUpgrade(socket: Duplex, status: number, reason = "Refused"): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
}

/**
 * A loopback URL of its own for one machine port (E2B's port URLs,
 * Daytona's preview links): its HTTP requests and upgrades go to `target`
 * while `reachable()` holds; a request gets a 502 and an upgrade a closed
 * socket otherwise.
 */
export async function forwardPort(
  target: PortTarget,
  reachable: () => boolean,
): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    if (reachable()) proxyHttp(req, res, target);
    else res.writeHead(502).end("the machine is not running");
  });
  server.on("upgrade", (req, socket: Duplex, head: Buffer) => {
    if (reachable()) proxyUpgrade(req, socket, head, target);
    else socket.destroy();
  });
  const url = await listenLoopback(server);
  const close = () => {
    server.closeAllConnections?.();
    server.close();
  };
  return { url, close };
}
