import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import { isTransientStatus } from "@agent-computer/provider-kit";
import { statusOf } from "./createos-service.js";
import type { ManagedProcesses } from "./managed-processes.js";

/** What a command needs of its sandbox. */
export interface ManagedCommandHost {
  processes: ManagedProcesses;
  /** The contract's error for a failed call. */
  failure(error: unknown, what: string): AgentComputerError;
  /** Whether the sandbox still runs (a cut stream on a paused sandbox is not reopened). */
  running(signal: AbortSignal): Promise<boolean>;
  /** Fires when the machine is stopped (paused) under the command: its reason is what the run throws. */
  paused: AbortSignal;
}

/** stdin goes in pieces of at most this many bytes (one `/input` each; the service's limit is not published). */
const STDIN_CHUNK = 256 * 1024;
/** How often a cut output stream is opened again before the command is given up on. */
const MAX_RECONNECTS = 5;
/** How long the kill of a command's tree may take. */
const KILL_TIMEOUT_MS = 15_000;
/** Signal numbers for an exit by signal (enums.go ManagedProcessSignal names). */
const SIGNAL_NUMBERS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGUSR2: 12,
  SIGTERM: 15,
};

/** The RunningCommand's `KEY=VALUE` environment as the API's map. */
function envMap(env: string[]): Record<string, string> {
  return Object.fromEntries(env.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
}

/**
 * Runs `command` as a managed process (processes.go): stdin sent through
 * `/input` and closed, stdout and stderr apart from the replayable
 * stream, the exit code from its exit frame. The command carries
 * RunningCommand's marker, so a timeout or an abort kills its whole tree
 * by a second managed process, beside the service's own tree delete
 * (DELETE /processes/:id). A cut stream is opened again from the last
 * sequence seen; a sandbox that stopped meanwhile ends the command with
 * UNAVAILABLE (the work is frozen with the VM, not ended, but its caller
 * has gone).
 */
export async function runManagedCommand(
  host: ManagedCommandHost,
  command: MachineCommand & {
    signal: AbortSignal;
    asUser: (argv: string[]) => string[];
    baseEnv: Record<string, string>;
  },
  what: string,
): Promise<ExecResult> {
  let processId: string | undefined;
  // The killer runs as the computer's user too: root without CAP_SYS_PTRACE (a container) cannot read another user's environ.
  const running = new RunningCommand(command, (argv) =>
    killTree(host, command.asUser(argv), processId, command.baseEnv).catch(() => {}),
  );
  const stream = new AbortController();
  const paused = pausedUnder(host.paused);
  const onAbort = () => stream.abort();
  command.signal.addEventListener("abort", onAbort, { once: true });
  try {
    try {
      const started = await host.processes.start(
        {
          argv: command.asUser(command.argv),
          cwd: command.workingDir,
          env: { ...command.baseEnv, ...envMap(running.env) },
        },
        stream.signal,
      );
      processId = started.process_id;
    } catch (error) {
      if (command.signal.aborted) throw running.abortError();
      throw host.failure(error, `start a command (${what})`);
    }
    running.startTimeout();
    const id = processId;
    const stdinDone = sendStdin(host, id, command.stdin, stream.signal).catch(() => {
      // The command may end before reading all of stdin; its result says what happened.
    });
    const outcome = await Promise.race([pump(host, id, running, stream.signal), running.aborted, paused.promise]);
    if (outcome === "aborted") {
      await running.kill().catch(() => {});
      return running.stopped();
    }
    await stdinDone;
    await running.settleTimeout();
    return running.result(outcome);
  } finally {
    running.finish();
    paused.dispose();
    command.signal.removeEventListener("abort", onAbort);
    stream.abort();
  }
}

/**
 * Rejects when the machine is paused under the command. The process is
 * not killed: it is frozen with the VM and runs on after a resume, but the
 * caller's command has ended.
 */
function pausedUnder(paused: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let onAbort = () => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(paused.reason);
    if (paused.aborted) onAbort();
    else paused.addEventListener("abort", onAbort, { once: true });
  });
  // Rejecting after the command ended is no one's failure.
  promise.catch(() => {});
  return { promise, dispose: () => paused.removeEventListener("abort", onAbort) };
}

async function sendStdin(
  host: ManagedCommandHost,
  processId: string,
  input: Uint8Array | Readable | undefined,
  signal: AbortSignal,
): Promise<void> {
  const send = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length; at += STDIN_CHUNK) {
      await host.processes.input(processId, bytes.subarray(at, at + STDIN_CHUNK), signal);
    }
  };
  if (input instanceof Uint8Array) await send(input);
  else if (input) {
    for await (const chunk of input) await send(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array));
  }
  // Closed also without stdin, so a command that reads it sees its end at once.
  await host.processes.closeStdin(processId, signal);
}

/** Reads the output stream to the exit frame (opening it again after a cut) and gives the exit code. */
async function pump(
  host: ManagedCommandHost,
  processId: string,
  running: RunningCommand,
  signal: AbortSignal,
): Promise<number | null> {
  let seen = 0;
  for (let attempt = 0; ; attempt++) {
    let cut = false;
    try {
      for await (const frame of host.processes.connect(processId, seen, signal)) {
        if (frame.type === "data" && frame.data_base64) {
          const seq = frame.seq ?? seen + 1;
          // A replay from `seen` sends nothing older; a frame at or before it would be a second copy.
          if (seq <= seen) continue;
          seen = seq;
          const bytes = Buffer.from(frame.data_base64, "base64");
          const stream = frame.stream === "stderr" ? "stderr" : "stdout";
          running.received(stream, bytes);
          running.keep(stream, bytes);
        } else if (frame.type === "exit") {
          return exitCodeOf(frame.exit_code, frame.signal);
        } else if (frame.type === "error") {
          throw new AgentComputerError(
            "UNAVAILABLE",
            `CreateOS reported the command failed: ${frame.error ?? "no message"}`,
            {
              retryable: false,
            },
          );
        }
      }
    } catch (error) {
      if (signal.aborted || AgentComputerError.is(error)) throw error;
      const status = statusOf(error);
      // An answer (404: the process is gone, 409: the VM does not run) is not a cut stream.
      if (status !== undefined && !isTransientStatus(status)) throw host.failure(error, "follow a command's output");
      if (attempt >= MAX_RECONNECTS) throw host.failure(error, "follow a command's output");
      cut = true;
    }
    if (!(await host.running(signal))) {
      throw new AgentComputerError("UNAVAILABLE", "The sandbox stopped while the command ran.", { retryable: false });
    }
    // A cut stream is opened again: its replay from `seen` has the rest of the output and the exit.
    if (cut) continue;
    // The stream ended without an exit frame (not published whether it may): ask the process itself.
    const now = await host.processes.get(processId, signal).catch((error) => {
      throw host.failure(error, "read a command's state");
    });
    if (now.state === "exited" || now.state === "failed") return exitCodeOf(now.exit_code, now.signal);
    if (attempt >= MAX_RECONNECTS) {
      throw new AgentComputerError("UNAVAILABLE", "CreateOS kept ending the command's output stream early.", {
        retryable: true,
      });
    }
  }
}

/** An exit code, or 128 + the signal's number for a process a signal ended (the shell's convention). */
function exitCodeOf(exitCode: number | null | undefined, signal: string | null | undefined): number | null {
  if (typeof exitCode === "number") return exitCode;
  const number = signal ? SIGNAL_NUMBERS[signal] : undefined;
  return number === undefined ? null : 128 + number;
}

/**
 * Kills a command's tree: the service's delete of the process (its tree,
 * COMPATIBILITY.md) and, for what left it (a setsid child), RunningCommand's
 * marker script as a second managed process, followed to its end.
 */
async function killTree(
  host: ManagedCommandHost,
  argv: string[],
  processId: string | undefined,
  env: Record<string, string>,
): Promise<void> {
  const signal = AbortSignal.timeout(KILL_TIMEOUT_MS);
  if (processId) await host.processes.remove(processId, 0, signal).catch(() => {});
  const killer = await host.processes.start({ argv, cwd: "/", env }, signal);
  for await (const frame of host.processes.connect(killer.process_id, 0, signal)) if (frame.type === "exit") return;
}
