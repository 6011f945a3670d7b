import { createConnection, type Socket } from "node:net";
import { CliError } from "./cli-error.js";
import type { GatewayLog } from "./gateway-log.js";
import { readFirstLine, TERMINAL_HOST_TAG, type TerminalHostRequest } from "./terminal-host.js";
import type { TerminalBackend, TerminalSession } from "./terminal-servers.js";

/** The terminal host restarts within a second of dying (LOOPBACK_PROXY_COMMAND's loop): so many tries cover it. */
const CONNECT_TRIES = 5;
const RETRY_MS = 400;

/**
 * The gateway's terminals when the display runs apart from the bot's
 * processes: every connection a terminal capability admits becomes a shell
 * on the computer's terminal host (terminal-host.ts), beside the bot's
 * processes. The host's shells end with their connection, so a control
 * session's end, which closes them all, hangs them all up: nothing runs
 * here to stop.
 */
export class RemoteTerminals implements TerminalBackend {
  constructor(
    private readonly host: { host: string; port: number },
    private readonly log: GatewayLog,
  ) {}

  prepare(): void {}

  controlIds(): string[] {
    return [];
  }

  async ready(session: TerminalSession): Promise<void> {
    const socket = await this.request("probe", session);
    socket.destroy();
  }

  connect(session: TerminalSession): Promise<Socket> {
    return this.request("open", session);
  }

  async stop(): Promise<void> {}

  async settle(): Promise<void> {}

  /** A connection past the host's answer, the shell's bytes (for `open`) next. */
  private async request(op: TerminalHostRequest["op"], session: TerminalSession): Promise<Socket> {
    const request: TerminalHostRequest = { op, control: session.controlId, bot: session.bot, home: session.home };
    let why = "";
    for (let attempt = 1; attempt <= CONNECT_TRIES; attempt++) {
      const socket = createConnection(this.host);
      socket.on("error", () => {});
      try {
        socket.write(`${TERMINAL_HOST_TAG} ${JSON.stringify(request)}\n`);
        const answer = JSON.parse(await readFirstLine(socket)) as { ok?: boolean; error?: string };
        if (answer.ok === true) return socket;
        socket.destroy();
        // The host ran and refused: trying again gets the same answer.
        throw new CliError(
          "UNAVAILABLE",
          `The computer's terminal host refused the terminal: ${answer.error ?? "no reason"}`,
        );
      } catch (error) {
        socket.destroy();
        if (error instanceof CliError) throw error;
        why = (error as Error).message;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    this.log.write("terminal-host-unreachable", { control: session.controlId, op });
    throw new CliError("UNAVAILABLE", `The computer's terminal host did not answer (${why}).`);
  }
}

/** `host:port` from the display container's environment (TERMINAL_HOST_ENV), or undefined when unset or malformed. */
export function terminalHostOf(value: string | undefined): { host: string; port: number } | undefined {
  const match = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(value ?? "");
  if (!match) return undefined;
  const port = Number(match[2]);
  return port > 0 && port < 65536 ? { host: match[1] as string, port } : undefined;
}
