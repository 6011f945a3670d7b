import { randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type ComputerContainers, demuxEngineStream, HttpAnswer, untilEnded } from "@agent-computer/testing/emulator";
import {
  type CommandFiles,
  commandFiles,
  commandWrapper,
  INPUT_WRITER,
  LOG_FOLLOWER,
  PREPARE_COMMAND,
  SESSION_SHELL_LAUNCHER,
  SESSION_TERMINATOR,
  SYNC_WAITER,
} from "./daemon-scripts.js";

/** The container a session's shell runs in, and as whom. */
export interface SessionMachine {
  containers: ComputerContainers;
  containerId: string;
  /** uid:gid of the sandbox's user (the daemon's: its sessions run as it). */
  user: string;
  /** The sandbox user's HOME: the daemon keeps its files under `$HOME/.daytona` (apps/daemon/cmd/daemon/main.go:54-59). */
  home: string;
  /** Streams the emulator ends when it closes. */
  open: Set<Socket>;
}

/** How long a delete waits after SIGTERM before SIGKILL (apps/daemon/cmd/daemon/config/config.go:23, default 5s). */
const TERMINATION_GRACE_SECONDS = 5;

/**
 * A command as the daemon keeps it (apps/daemon/pkg/session/types.go
 * Command): its exit code is known to the daemon only once something read
 * the exit-code file through it (GetSessionCommand, a sync execute), and that
 * is what SendInput checks (input.go:36).
 */
export interface DaemonCommand {
  id: string;
  command: string;
  suppressInputEcho: boolean;
  files: CommandFiles;
  exitCode?: number;
}

/**
 * One toolbox session: a long-lived shell in the sandbox's container that
 * runs each command under the daemon's wrapper, its files under
 * `$HOME/.daytona/sessions/<session>/<command>/` (output.log with each line
 * labelled, exit_code, cmd.sh, the FIFOs), as apps/daemon/pkg/session does.
 */
export class DaemonSession {
  readonly commands = new Map<string, DaemonCommand>();
  /** Log readers still running: a delete ends them (log.go:62-78 closes the socket when the session goes). */
  private readonly readers = new Set<Duplex>();
  private exited = false;

  private constructor(
    private readonly machine: SessionMachine,
    readonly id: string,
    readonly dir: string,
    private readonly shell: Duplex,
    private readonly shellPid: number,
  ) {
    void untilEnded(shell).then(() => {
      this.exited = true;
    });
  }

  /** Starts the session's shell (apps/daemon/pkg/session/create.go Create). */
  static async open(machine: SessionMachine, id: string): Promise<DaemonSession> {
    const dir = `${machine.home}/.daytona/sessions/${id}`;
    const { stream } = await machine.containers.startCommand(
      machine.containerId,
      ["python3", "-c", SESSION_SHELL_LAUNCHER, dir],
      { user: machine.user, stdin: true },
    );
    const pid = await new Promise<number>((resolve, reject) => {
      let text = "";
      demuxEngineStream(
        stream,
        (chunk) => {
          text += chunk.toString("utf8");
          const line = /^(\d+)\n/.exec(text);
          if (line) resolve(Number(line[1]));
        },
        () => {},
      );
      void untilEnded(stream).then(() => reject(new HttpAnswer(500, "the session's shell did not start")));
    });
    return new DaemonSession(machine, id, dir, stream, pid);
  }

  /**
   * Starts a command (apps/daemon/pkg/session/execute.go Execute): its
   * files made, the wrapper written to the shell. Async: answers at once;
   * sync: after the exit code, with the log.
   */
  async execute(
    command: string,
    runAsync: boolean,
    suppressInputEcho: boolean,
  ): Promise<{ command: DaemonCommand; log?: Buffer }> {
    const id = randomUUID();
    const files = commandFiles(this.dir, id);
    const entry: DaemonCommand = { id, command, suppressInputEcho, files };
    this.commands.set(id, entry);
    const prepared = await this.run(["sh", "-c", PREPARE_COMMAND, "prepare", files.dir, files.log, files.script], {
      input: Buffer.from(command, "utf8"),
    });
    if (prepared.exitCode !== 0) throw new HttpAnswer(400, `failed to write command file: ${prepared.stderr}`);
    await new Promise<void>((resolve, reject) =>
      this.shell.write(commandWrapper(files, runAsync), (error) =>
        error ? reject(new HttpAnswer(400, `failed to write command: ${error.message}`)) : resolve(),
      ),
    );
    if (runAsync) return { command: entry };
    const waited = await this.run(["python3", "-c", SYNC_WAITER, files.exitCode, files.log]);
    const newline = waited.stdout.indexOf(10);
    entry.exitCode = Number(waited.stdout.subarray(0, newline).toString("utf8"));
    return { command: entry, log: waited.stdout.subarray(newline + 1) };
  }

  /** The daemon's 404 for a command this session does not have (command.go:40-43). */
  command(commandId: string): DaemonCommand {
    const command = this.commands.get(commandId);
    if (!command) throw new HttpAnswer(404, "command not found");
    return command;
  }

  /** A command's exit code as GetSessionCommand finds it (command.go:34-66): cached once read. */
  async exitCodeOf(command: DaemonCommand): Promise<number | undefined> {
    if (command.exitCode !== undefined) return command.exitCode;
    const read = await this.run(["cat", "--", command.files.exitCode]);
    const text = read.stdout.toString("utf8").trimEnd();
    if (read.exitCode !== 0 || text === "") return undefined;
    command.exitCode = Number(text);
    return command.exitCode;
  }

  /** The whole labelled log (log.go:121-137); 404 when the file is gone. */
  async logOf(command: DaemonCommand): Promise<Buffer> {
    const read = await this.run(["cat", "--", command.files.log]);
    if (read.exitCode !== 0) throw new HttpAnswer(404, "log file not found");
    return read.stdout;
  }

  /**
   * Streams a command's log as the daemon's websocket does (ReadLogWithExitCode):
   * `chunk` gets each read, `end` once the reader stopped (log done, session
   * gone, or `stop` called).
   */
  async follow(
    command: DaemonCommand,
    follow: boolean,
    chunk: (bytes: Buffer) => void,
    end: () => void,
  ): Promise<{ stop(): void }> {
    const { stream } = await this.machine.containers.startCommand(
      this.machine.containerId,
      ["python3", "-c", LOG_FOLLOWER, command.files.log, command.files.exitCode, follow ? "1" : "0", this.dir],
      { user: this.machine.user },
    );
    this.readers.add(stream);
    demuxEngineStream(stream, chunk, () => {});
    void untilEnded(stream).then(() => {
      this.readers.delete(stream);
      end();
    });
    return { stop: () => stream.destroy() };
  }

  /**
   * Input for a running command (apps/daemon/pkg/session/input.go SendInput):
   * 410 when the session's shell has exited or the daemon already knows the
   * command's exit code; 500 when its input FIFO cannot be opened (the
   * command ended and removed it, but nothing read its exit code yet).
   */
  async sendInput(command: DaemonCommand, data: string): Promise<void> {
    if (this.exited) throw new HttpAnswer(410, "session process has exited");
    if (command.exitCode !== undefined)
      throw new HttpAnswer(410, `command has already completed with exit code ${command.exitCode}`);
    const echo = command.suppressInputEcho ? "0" : "1";
    const wrote = await this.run(["python3", "-c", INPUT_WRITER, command.files.input, command.files.log, echo], {
      input: Buffer.from(data, "utf8"),
    });
    if (wrote.exitCode !== 0) throw new HttpAnswer(500, wrote.stderr || "failed to write to input pipe");
  }

  /** Ends the session (apps/daemon/pkg/session/delete.go Delete): its processes signalled, its folder removed. */
  async delete(): Promise<void> {
    await this.run([
      "python3",
      "-c",
      SESSION_TERMINATOR,
      String(this.shellPid),
      this.dir,
      `${TERMINATION_GRACE_SECONDS}`,
    ]);
    for (const reader of this.readers) reader.destroy();
    this.shell.destroy();
  }

  /** Drops the session without signalling (its container stopped or went). */
  abandon(): void {
    for (const reader of this.readers) reader.destroy();
    this.shell.destroy();
  }

  private async run(
    argv: string[],
    options: { input?: Buffer } = {},
  ): Promise<{ exitCode: number; stdout: Buffer; stderr: string }> {
    const { containers, containerId, user } = this.machine;
    const result = await containers.run(containerId, argv, { user, ...options });
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr.toString("utf8").trim() };
  }
}
