import { rm } from "node:fs/promises";
import { connect, createServer, type Socket } from "node:net";

/**
 * A Unix socket that forwards to the engine's socket, so a test can cut the
 * connection between dockerode and the engine at a moment it chooses.
 */
export class EngineSocketProxy {
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((client) => {
    const upstream = connect(this.enginePath);
    this.sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });

  constructor(
    readonly path: string,
    private readonly enginePath = "/var/run/docker.sock",
  ) {}

  async listen(): Promise<void> {
    await rm(this.path, { force: true });
    await new Promise<void>((resolve) => this.server.listen(this.path, resolve));
  }

  /** Cuts every open connection and refuses new ones. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
