import type { Socket } from "node:net";
import type { Duplex, Writable } from "node:stream";
import {
  type ComputerContainers,
  demuxEngineStream,
  type ExecOptions,
  type StartedExec,
  untilEnded,
} from "./computer-containers.js";

/**
 * Runs a command with its stdout written into `sink` as it comes, at the
 * sink's pace (the engine's stream paused while the sink is full). A sink
 * that closes lets the stream go: a paused engine stream never finishes its
 * exec, and every later exec in the machine then hangs. `beforeFirst` runs
 * before the first byte is written (a part's header). Gives the exit code
 * and the whole stderr.
 */
export async function pipeStdout(
  containers: ComputerContainers,
  id: string,
  argv: string[],
  options: ExecOptions,
  sink: Writable,
  beforeFirst: () => void = () => {},
): Promise<{ exitCode: number; stderr: Buffer }> {
  const { exec, stream } = await containers.startCommand(id, argv, options);
  const stderr: Buffer[] = [];
  sink.once("close", () => stream.resume());
  const ended = untilEnded(stream);
  const onStdout = (chunk: Buffer) => {
    beforeFirst();
    if (!sink.write(chunk) && !stream.isPaused()) {
      stream.pause();
      sink.once("drain", () => stream.resume());
    }
  };
  demuxEngineStream(stream, onStdout, (chunk) => stderr.push(chunk));
  await ended;
  const state = await exec.inspect();
  return { exitCode: state.ExitCode ?? -1, stderr: Buffer.concat(stderr) };
}

/** One who follows a kept command: each chunk as it comes, then its end. */
export interface CommandFollower {
  data(stream: 1 | 2, chunk: Buffer): void;
  end(): void;
}

/** A command left running in a machine: its output kept in order and followed live, its stdin open until it ends. */
export interface KeptCommand {
  /** Every chunk so far, in the order it came: 1 stdout, 2 stderr. */
  readonly output: { stream: 1 | 2; chunk: Buffer }[];
  readonly followers: Set<CommandFollower>;
  /** Set once it ended (-1 when the engine could not tell). */
  exitCode?: number;
  /** Its stdin while it runs (destroy it to end the command's stream). */
  stdin?: Duplex;
  /** Resolves once it ended and its followers were told. */
  readonly done: Promise<void>;
}

/**
 * Starts a command whose output is kept and can be followed (an API's async
 * exec with a log stream). `open` holds the engine's stream while it lives,
 * so closing the emulator ends it (as `proxyUpgrade`'s does).
 */
export async function startKept(
  containers: ComputerContainers,
  id: string,
  argv: string[],
  options: ExecOptions,
  open?: Set<Socket>,
): Promise<KeptCommand> {
  const { exec, stream } = await containers.startCommand(id, argv, { ...options, stdin: true });
  open?.add(stream as Socket);
  stream.once("close", () => open?.delete(stream as Socket));
  const output: KeptCommand["output"] = [];
  const followers = new Set<CommandFollower>();
  const emit = (kind: 1 | 2) => (chunk: Buffer) => {
    output.push({ stream: kind, chunk });
    for (const follower of followers) follower.data(kind, chunk);
  };
  demuxEngineStream(stream, emit(1), emit(2));
  const command: KeptCommand = {
    output,
    followers,
    stdin: stream,
    done: untilEnded(stream).then(async () => {
      const info = await exec.inspect().catch(() => undefined);
      command.exitCode = info?.ExitCode ?? -1;
      command.stdin = undefined;
      for (const follower of followers) follower.end();
      followers.clear();
    }),
  };
  return command;
}

/** A command's end as a service that cuts its answer sees it: each output's first `cap` bytes and its whole size. */
export interface CappedExec {
  /** Null when the engine reports none. */
  exitCode: number | null;
  stdout: Buffer;
  stderr: Buffer;
  sizes: { stdout: number; stderr: number };
}

/** Reads a started command to its end, holding no more than `cap` bytes of each output however much it writes. */
export async function collectCapped({ exec, stream }: StartedExec, cap: number): Promise<CappedExec> {
  const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const sizes = { stdout: 0, stderr: 0 };
  const keep = (name: "stdout" | "stderr") => (chunk: Buffer) => {
    if (sizes[name] < cap) kept[name].push(chunk.subarray(0, cap - sizes[name]));
    sizes[name] += chunk.length;
  };
  const ended = untilEnded(stream);
  demuxEngineStream(stream, keep("stdout"), keep("stderr"));
  await ended;
  const exitCode = (await exec.inspect()).ExitCode ?? null;
  return { exitCode, stdout: Buffer.concat(kept.stdout), stderr: Buffer.concat(kept.stderr), sizes };
}
