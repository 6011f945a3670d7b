import type { Readable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type { ProcessEvent, ProcessRpc } from "./envd-process.js";

/** What a command needs of its sandbox. */
export interface EnvdCommandHost {
  rpc: ProcessRpc;
  headers: Record<string, string>;
  /** The contract's error for a transport failure (the sandbox gone, paused, unreachable). */
  failure(error: unknown, what: string): Promise<AgentComputerError>;
  /** Called when a command's processes could not be confirmed killed (Novita quarantines the computer). */
  killUnconfirmed?(what: string): Promise<void>;
}

/** stdin is sent in pieces of at most this many bytes (each one SendInput call). */
const STDIN_CHUNK = 1024 * 1024;
/** How long the kill of a command's tree may take before it is given up on. */
const KILL_TIMEOUT_MS = 10_000;
/** How long a start envd may still be making after its stream was cut, before the marker is killed again. */
const START_LANDS_MS = 1500;

/** The environment of a RunningCommand as envd's map. */
function envMap(env: string[]): Record<string, string> {
  return Object.fromEntries(
    env.map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)];
    }),
  );
}

/** Starts `argv` and returns its pid and the rest of its events. */
async function startProcess(
  host: EnvdCommandHost,
  command: { argv: string[]; env: Record<string, string>; cwd: string; stdin: boolean },
  signal: AbortSignal,
): Promise<{ pid: number; events: AsyncIterator<ProcessEvent> }> {
  const [cmd, ...args] = command.argv as [string, ...string[]];
  // No timeoutMs: the SDK's default is a 60 s deadline on the whole stream.
  const stream = host.rpc.start(
    { process: { cmd, args, envs: command.env, cwd: command.cwd }, stdin: command.stdin },
    { headers: host.headers, signal },
  );
  const events = stream[Symbol.asyncIterator]();
  const first = await events.next();
  const event = first.value?.event?.event;
  if (first.done || event?.case !== "start") {
    throw new AgentComputerError("UNAVAILABLE", "envd did not report the command's start.");
  }
  return { pid: event.value.pid, events };
}

/** Runs a short helper (the tree kill) and waits for its end, ignoring its output. */
async function runQuiet(host: EnvdCommandHost, argv: string[], cwd: string): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), KILL_TIMEOUT_MS);
  try {
    const { events } = await startProcess(host, { argv, env: {}, cwd, stdin: false }, controller.signal);
    for (;;) {
      const next = await events.next();
      if (next.done || next.value.event?.event.case === "end") return;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

async function sendStdin(host: EnvdCommandHost, pid: number, input: Uint8Array | Readable, signal: AbortSignal) {
  const selector = { selector: { case: "pid" as const, value: pid } };
  const send = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length; at += STDIN_CHUNK) {
      if (signal.aborted) return;
      await host.rpc.sendInput(
        { process: selector, input: { input: { case: "stdin", value: bytes.subarray(at, at + STDIN_CHUNK) } } },
        { headers: host.headers, signal },
      );
    }
  };
  if (input instanceof Uint8Array) await send(input);
  else
    for await (const chunk of input) await send(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array));
  await host.rpc.closeStdin({ process: selector }, { headers: host.headers, signal });
}

/**
 * Runs `command` in the sandbox through envd's process service: stdout and
 * stderr as bytes, apart; stdin sent and closed; a non-zero exit is a
 * result. The command carries RunningCommand's marker, so a timeout, an
 * abort or a broken stream kills its whole tree by a second process (envd's
 * kill reaches only the leader, E2B #500, #1031), and no orphan survives.
 */
export async function runEnvdCommand(
  host: EnvdCommandHost,
  command: MachineCommand & { signal: AbortSignal },
  what: string,
): Promise<ExecResult> {
  const running = new RunningCommand(command, (argv) => runQuiet(host, argv, "/"));
  const stream = new AbortController();
  const withStdin = command.stdin !== undefined;
  let started: { pid: number; events: AsyncIterator<ProcessEvent> };
  try {
    started = await Promise.race([
      startProcess(
        host,
        { argv: command.argv, env: envMap(running.env), cwd: command.workingDir, stdin: withStdin },
        stream.signal,
      ),
      running.aborted.then(() => {
        throw running.abortError();
      }),
    ]);
  } catch (error) {
    stream.abort();
    if (command.signal.aborted) {
      await running.kill().catch(() => {});
      throw running.abortError();
    }
    const failure = await host.failure(error, what);
    // A stream cut before its start event reached us may have started the
    // command all the same: kill by its marker, as after a cut mid-run. envd
    // may still be starting it when that kill runs (the emulator's faults
    // suite caught one starting after it), so the marker is killed once more
    // when the start has had time to land.
    if (failure.code === "UNAVAILABLE") {
      const killed = await confirmKill(running);
      await delay(START_LANDS_MS);
      const killedAgain =
        killed &&
        (await running.killAgain().then(
          () => true,
          () => false,
        ));
      if (!killedAgain) await host.killUnconfirmed?.(what).catch(() => {});
    }
    throw failure;
  }
  running.startTimeout();
  const stdinDone = withStdin
    ? sendStdin(host, started.pid, command.stdin as Uint8Array | Readable, stream.signal).catch(() => {
        // The command may exit before reading all of stdin; its result says what happened.
      })
    : Promise.resolve();
  const pump = (async (): Promise<number> => {
    for (;;) {
      const next = await started.events.next();
      if (next.done) throw new AgentComputerError("UNAVAILABLE", "envd ended the command's stream without its exit.");
      const event = next.value.event?.event;
      if (event?.case === "data") {
        const output = event.value.output;
        if (output.case === "stdout" || output.case === "stderr") {
          running.received(output.case, output.value);
          running.keep(output.case, output.value);
        }
      } else if (event?.case === "end") {
        return event.value.exitCode ?? 0;
      }
    }
  })();
  try {
    const outcome = await Promise.race([pump, running.aborted]);
    if (outcome === "aborted") {
      if (!(await confirmKill(running))) await host.killUnconfirmed?.(what);
      return running.stopped();
    }
    await running.settleTimeout();
    if (running.timedOut && !(await confirmKill(running))) await host.killUnconfirmed?.(what);
    await stdinDone;
    return running.result(outcome);
  } catch (error) {
    if (command.signal.aborted) throw running.abortError();
    if (running.isStopFailure(error)) throw error;
    if (AgentComputerError.is(error) && error.code === "ABORTED") throw error;
    // The stream broke while the command ran: kill what it left, then say so.
    const killed = await confirmKill(running);
    if (!killed) await host.killUnconfirmed?.(what).catch(() => {});
    const failure = await host.failure(error, what);
    throw new AgentComputerError(
      failure.code === "PROVIDER_GONE" ? "PROVIDER_GONE" : "UNAVAILABLE",
      `The connection to the sandbox broke while the command ran (${failure.message}); ${killed ? "its processes were killed" : "its processes could not be confirmed killed"}.`,
      { cause: error, retryable: false, details: { killConfirmed: killed } },
    );
  } finally {
    running.finish();
    stream.abort();
    pump.catch(() => {});
  }
}

/** Kills the command's tree (once) and says whether that was confirmed. */
function confirmKill(running: RunningCommand): Promise<boolean> {
  return running.kill().then(
    () => true,
    () => false,
  );
}
