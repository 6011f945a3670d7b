import { randomUUID } from "node:crypto";
import type { Duplex } from "node:stream";
import { type ComputerContainers, demuxEngineStream, HttpAnswer, untilEnded } from "@agent-computer/testing/emulator";
import { type CommandFiles, commandFiles, commandWrapper } from "./daemon-scripts.js";
import { DAEMON_STAND_IN } from "./daemon-stand-in.js";

/** How long a delete waits after SIGTERM before SIGKILL (apps/daemon/cmd/daemon/config/config.go:23, default 5s). */
const TERMINATION_GRACE_SECONDS = 5;

/** One answer of the stand-in. */
type StandInAnswer = { ok: boolean; status?: number; message?: string } & Record<string, unknown>;

/**
 * The daemon's stand-in in one container (daemon-stand-in.ts): one `docker
 * exec` that lives as long as the container runs, taking requests and
 * answering them in order of completion.
 */
export class SandboxDaemon {
  private nextId = 1;
  private readonly waiting = new Map<number, (answer: StandInAnswer) => void>();
  private readonly streams = new Map<number, { chunk(bytes: Buffer): void; end(): void }>();
  private ended = false;

  private constructor(private readonly engine: Duplex) {
    let pending = "";
    demuxEngineStream(
      engine,
      (chunk) => {
        pending += chunk.toString("utf8");
        let newline = pending.indexOf("\n");
        while (newline >= 0 && !this.ended) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          newline = pending.indexOf("\n");
          const message = answerOf(line);
          // Not the stand-in's: the engine's own words on a container going away as the exec started
          // ("OCI runtime exec failed: ..."). The daemon is gone, as when the exec ends.
          if (message) this.dispatch(message);
          else engine.destroy();
        }
      },
      () => {},
    );
    void untilEnded(engine).then(() => {
      this.ended = true;
      for (const resolve of this.waiting.values()) resolve({ ok: false, status: 502, message: "the sandbox stopped" });
      for (const follower of this.streams.values()) follower.end();
      this.waiting.clear();
      this.streams.clear();
    });
  }

  /** Starts the stand-in in a running container, as the sandbox's user (the daemon's sessions run as it). */
  static async start(containers: ComputerContainers, containerId: string, user: string): Promise<SandboxDaemon> {
    const { stream } = await containers.startCommand(containerId, ["python3", "-c", DAEMON_STAND_IN], {
      user,
      stdin: true,
    });
    return new SandboxDaemon(stream);
  }

  /** One request; an answer that is not ok becomes the daemon's error status. */
  async call(op: string, request: Record<string, unknown>): Promise<StandInAnswer> {
    const answer = await this.send(op, request);
    if (!answer.ok) throw new HttpAnswer(answer.status ?? 500, answer.message ?? "failed");
    return answer;
  }

  /** A streaming request (follow): chunks as they come, then the end. Gives a way to stop it. */
  async follow(
    request: Record<string, unknown>,
    chunk: (bytes: Buffer) => void,
    end: () => void,
  ): Promise<{ stop(): void }> {
    const id = this.nextId;
    this.streams.set(id, { chunk, end });
    const answer = await this.send("follow", request);
    if (!answer.ok) {
      this.streams.delete(id);
      throw new HttpAnswer(answer.status ?? 500, answer.message ?? "failed");
    }
    return { stop: () => void this.send("cancel", { target: id }).catch(() => {}) };
  }

  /** Ends the stand-in (the container stops or goes). */
  close(): void {
    this.engine.destroy();
  }

  private send(op: string, request: Record<string, unknown>): Promise<StandInAnswer> {
    if (this.ended) return Promise.resolve({ ok: false, status: 502, message: "the sandbox stopped" });
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.engine.write(`${JSON.stringify({ ...request, op, id })}\n`);
    });
  }

  private dispatch(message: StandInAnswer & { id: number }): void {
    const follower = this.streams.get(message.id);
    if (follower && typeof message.chunk === "string") {
      follower.chunk(Buffer.from(message.chunk, "base64"));
      return;
    }
    if (follower && message.end === true) {
      this.streams.delete(message.id);
      follower.end();
      return;
    }
    const resolve = this.waiting.get(message.id);
    this.waiting.delete(message.id);
    resolve?.(message);
  }
}

/** A line of the stand-in's output as its answer, or undefined for one it did not write. */
function answerOf(line: string): (StandInAnswer & { id: number }) | undefined {
  try {
    const message = JSON.parse(line) as unknown;
    return typeof message === "object" && message !== null && typeof (message as { id?: unknown }).id === "number"
      ? (message as StandInAnswer & { id: number })
      : undefined;
  } catch {
    return undefined;
  }
}

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
  private readonly readers = new Set<{ stop(): void }>();

  private constructor(
    private readonly daemon: SandboxDaemon,
    readonly id: string,
    readonly dir: string,
  ) {}

  /**
   * Starts the session's shell (apps/daemon/pkg/session/create.go Create);
   * its folder under the HOME the daemon keeps its files in
   * (apps/daemon/cmd/daemon/main.go:54-59: `$HOME/.daytona`).
   */
  static async open(daemon: SandboxDaemon, home: string, id: string): Promise<DaemonSession> {
    const dir = `${home}/.daytona/sessions/${id}`;
    await daemon.call("open", { session: id, dir });
    return new DaemonSession(daemon, id, dir);
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
    const wrapper = commandWrapper(files, runAsync);
    await this.daemon.call("exec", { session: this.id, files, command, wrapper });
    if (runAsync) return { command: entry };
    const waited = await this.daemon.call("wait", { exitCode: files.exitCode, log: files.log });
    entry.exitCode = Number(waited.exitCode);
    return { command: entry, log: Buffer.from(String(waited.log), "base64") };
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
    const read = await this.daemon.call("read", { path: command.files.exitCode }).catch(() => undefined);
    const text = read ? Buffer.from(String(read.data), "base64").toString("utf8").trimEnd() : "";
    if (text === "") return undefined;
    command.exitCode = Number(text);
    return command.exitCode;
  }

  /** The whole labelled log (log.go:121-137); 404 when the file is gone. */
  async logOf(command: DaemonCommand): Promise<Buffer> {
    const read = await this.daemon.call("read", { path: command.files.log });
    return Buffer.from(String(read.data), "base64");
  }

  /**
   * Streams a command's log as the daemon's websocket does (log_reader.go
   * ReadLogWithExitCode): `chunk` gets each read, `end` once the reader
   * stopped (log done, session gone, or `stop` called).
   */
  async follow(
    command: DaemonCommand,
    follow: boolean,
    chunk: (bytes: Buffer) => void,
    end: () => void,
  ): Promise<{ stop(): void }> {
    const request = { log: command.files.log, exitCode: command.files.exitCode, follow, dir: this.dir };
    let reader: { stop(): void } | undefined;
    const started = await this.daemon.follow(request, chunk, () => {
      if (reader) this.readers.delete(reader);
      end();
    });
    reader = started;
    this.readers.add(started);
    return started;
  }

  /**
   * Input for a running command (apps/daemon/pkg/session/input.go SendInput):
   * 410 when the session's shell has exited or the daemon already knows the
   * command's exit code; 500 when its input FIFO cannot be opened (the
   * command ended and removed it, but nothing read its exit code yet).
   */
  async sendInput(command: DaemonCommand, data: string): Promise<void> {
    const { alive } = await this.daemon.call("alive", { session: this.id });
    if (!alive) throw new HttpAnswer(410, "session process has exited");
    if (command.exitCode !== undefined)
      throw new HttpAnswer(410, `command has already completed with exit code ${command.exitCode}`);
    const { input, log } = command.files;
    await this.daemon.call("input", { pipe: input, log, echo: !command.suppressInputEcho, data });
  }

  /** Ends the session (apps/daemon/pkg/session/delete.go Delete): its processes signalled, its folder removed. */
  async delete(): Promise<void> {
    await this.daemon.call("delete", { session: this.id, dir: this.dir, grace: TERMINATION_GRACE_SECONDS });
    for (const reader of this.readers) reader.stop();
  }
}
