import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  type ComputerContainers,
  demuxEngineStream,
  refuseUpgrade,
  untilEnded,
} from "@agent-computer/testing/emulator";
import { type WebSocket, WebSocketServer } from "ws";

/** The subprotocol the bridge expects beside the JWT (SDK src/core/exec-ws-client.ts, SHELL_SUBPROTOCOL). */
const SHELL_SUBPROTOCOL = "railway-shell";
/** Binary frame tags (CLI src/controllers/sandbox_exec.rs: STREAM_STDOUT 0x01, STREAM_STDIN 0x02, STREAM_STDERR 0x03). */
const STDOUT = 0x01;
const STDIN = 0x02;
const STDERR = 0x03;

/** Where a shell token leads: the container of a running instance, and the user it runs as. */
export interface BridgeTarget {
  containerId: string;
  user: string;
  /** Whether the deployment still runs (a stop, a newer deployment or a deletion ends it at once). */
  alive(): boolean;
}

/**
 * The tcp-proxy's `/ws/exec` as its clients speak it (SDK
 * src/core/exec-ws-client.ts; CLI src/controllers/sandbox_exec.rs, whose
 * header names the server's handler, mono tcp-proxy ws_bridge_exec.go,
 * which is not public): the JWT rides as the last subprotocol beside
 * `railway-shell`; the first text frame is `init_exec` with `command`
 * (run here by `sh -c`, as the CLI passes a user's shell line through
 * unchanged), `cwd` and `env`; stdin comes as 0x02 frames and ends with
 * `stdin_close`; output goes as 0x01/0x03 frames; the end as
 * `{"type":"exit","data":{"exit_code"}}`, then a normal close. A command
 * whose machine goes before it ends closes without an exit frame.
 */
export class ExecBridgeServer {
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has(SHELL_SUBPROTOCOL) ? SHELL_SUBPROTOCOL : false),
  });
  /** Commands run through the bridge, for tests. */
  started = 0;

  constructor(
    private readonly containers: ComputerContainers,
    /** The running instance a token admits to; undefined refuses the upgrade (401). */
    private readonly targetOf: (token: string) => BridgeTarget | undefined,
  ) {}

  /** Takes an upgrade to `/ws/exec`; gives the status it answered. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): number {
    const offered = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim());
    const token = offered.length === 2 && offered[0] === SHELL_SUBPROTOCOL ? offered[1] : undefined;
    const target = token ? this.targetOf(token) : undefined;
    if (!target) {
      refuseUpgrade(socket, 401, "Unauthorized");
      return 401;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.serve(ws, target));
    return 101;
  }

  private serve(ws: WebSocket, target: BridgeTarget): void {
    const pending: Buffer[] = [];
    let stdinClosed = false;
    let engine: Duplex | undefined;
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        if (data[0] !== STDIN || data.length <= 1) return;
        if (engine) engine.write(data.subarray(1));
        else pending.push(Buffer.from(data.subarray(1)));
        return;
      }
      let frame: { type?: string; data?: { command?: unknown; cwd?: unknown; env?: unknown } };
      try {
        frame = JSON.parse(data.toString("utf8"));
      } catch {
        return;
      }
      if (frame.type === "stdin_close") {
        stdinClosed = true;
        engine?.end();
      } else if (frame.type === "init_exec" && !engine && typeof frame.data?.command === "string") {
        void this.run(ws, target, frame.data as { command: string; cwd?: string; env?: Record<string, string> }, {
          attach: (stream) => {
            engine = stream;
            for (const chunk of pending.splice(0)) stream.write(chunk);
            if (stdinClosed) stream.end();
          },
        });
      }
    });
  }

  private async run(
    ws: WebSocket,
    target: BridgeTarget,
    init: { command: string; cwd?: string; env?: Record<string, string> },
    { attach }: { attach: (stream: Duplex) => void },
  ): Promise<void> {
    try {
      this.started++;
      const { exec, stream } = await this.containers.startCommand(target.containerId, ["sh", "-c", init.command], {
        user: target.user,
        env: init.env ?? {},
        workingDir: init.cwd || "/",
        stdin: true,
      });
      const ended = untilEnded(stream);
      const frame = (tag: number) => (chunk: Buffer) => {
        if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.of(tag), chunk]), { binary: true });
      };
      demuxEngineStream(stream, frame(STDOUT), frame(STDERR));
      attach(stream);
      ws.once("close", () => stream.destroy());
      await ended;
      // A machine that went (stopped, replaced, deleted) ends its commands without an exit (SDK ExecInterruptedError).
      if (!target.alive()) throw new Error("the machine went before the command ended");
      const state = await exec.inspect();
      if (state.Running || state.ExitCode === null) throw new Error("the machine went before the command ended");
      ws.send(JSON.stringify({ type: "exit", data: { exit_code: state.ExitCode, reason: "" } }));
      ws.close(1000, "");
    } catch (error) {
      if (ws.readyState === ws.OPEN) ws.close(1011, String((error as Error).message ?? error).slice(0, 100));
    }
  }

  close(): void {
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }
}
