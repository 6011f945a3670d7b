import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

/** One of an emulator's servers; `port` is set once `listen` resolved (and kept after close). */
export interface LoopbackServer {
  readonly server: Server;
  port: number;
}

/**
 * An emulator's loopback HTTP servers (its API, its port routes, ...): each
 * listens on 127.0.0.1 on a port the OS picks. Every connection, and every
 * upstream socket a proxy puts in `sockets` (see `proxyUpgrade`), is
 * destroyed on close, so closing never waits on a keep-alive or a websocket.
 */
export class LoopbackServers {
  readonly sockets = new Set<Socket>();
  private readonly servers: LoopbackServer[] = [];

  serve(
    onRequest: (req: IncomingMessage, res: ServerResponse) => void,
    onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  ): LoopbackServer {
    const server = createServer(onRequest);
    if (onUpgrade) server.on("upgrade", onUpgrade);
    server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    const served = { server, port: 0 };
    this.servers.push(served);
    return served;
  }

  async listen(): Promise<void> {
    for (const served of this.servers) {
      await new Promise<void>((resolve) => served.server.listen(0, "127.0.0.1", resolve));
      const address = served.server.address();
      served.port = typeof address === "object" && address ? address.port : 0;
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map(({ server }) => new Promise((resolve) => server.close(resolve))));
  }
}

/** Listens on a free loopback port; gives the server's URL. */
export async function listenLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
