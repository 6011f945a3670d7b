import { rm } from "node:fs/promises";
import { connect, createServer, type Socket } from "node:net";

/**
 * A Unix socket that forwards to the engine's socket, so a test can cut the
 * connection between dockerode and the engine at a moment it chooses, or
 * hold back the output of exec streams (a slow engine or network).
 */
export class EngineSocketProxy {
  private readonly sockets = new Set<Socket>();
  private execOutputDelayMs = 0;
  // Half-open: a client that ends its request (stdin) still gets the whole answer.
  private readonly server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(this.enginePath);
    this.sockets.add(client).add(upstream);
    // Which request the connection carries now: a kept-alive connection serves several.
    let carriesExecStart = false;
    let answerStarted = false;
    client.on("data", (chunk: Buffer) => {
      const line = chunk.subarray(0, 120).toString("latin1");
      if (!/^[A-Z]+ \//.test(line)) return;
      carriesExecStart = /^POST \/(v[\d.]+\/)?exec\/[^/]+\/start/.test(line);
      answerStarted = false;
    });
    client.pipe(upstream);
    // An exec stream's first chunk (its answer's head) passes, so the command
    // starts; the rest, its end included, goes through one queue of timers.
    const fromEngine = (deliver: () => void) => {
      const delay = carriesExecStart && answerStarted ? this.execOutputDelayMs : 0;
      answerStarted = true;
      if (delay === 0) deliver();
      // Timers of one delay fire in order, so the bytes keep theirs.
      else setTimeout(deliver, delay);
    };
    upstream.on("data", (chunk: Buffer) => fromEngine(() => client.writable && client.write(chunk)));
    upstream.on("end", () => fromEngine(() => client.end()));
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    // The engine hung up: end (never destroy) the client, so bytes still queued for it arrive.
    upstream.on("error", drop).on("close", () => fromEngine(() => client.end()));
  });

  constructor(
    readonly path: string,
    private readonly enginePath = "/var/run/docker.sock",
  ) {}

  async listen(): Promise<void> {
    await rm(this.path, { force: true });
    await new Promise<void>((resolve) => this.server.listen(this.path, resolve));
  }

  /** From now on, every exec stream's bytes after its first chunk reach the client `ms` later (0 to stop). */
  delayExecOutput(ms: number): void {
    this.execOutputDelayMs = ms;
  }

  /** Cuts every open connection and refuses new ones. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
