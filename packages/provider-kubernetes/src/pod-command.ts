import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type { PodCommandHost } from "./pod-command-host.js";
import { describeEnd, type PodExecEnd, PodExecSession, STDIN_CHUNK, V5_CHANNEL } from "./pod-exec-session.js";

/** A command to run in a pod through `pods/exec`. */
export interface PodCommand extends MachineCommand {
  /**
   * Takes stdout instead of keeping it (the export's stream); return false
   * to pause the connection until `resume` is called. `onOutput` then sees
   * stderr only.
   */
  stdoutSink?: (chunk: Buffer, resume: () => void) => boolean;
  /** Fires on the caller's abort or deadline; its reason is what we throw. */
  signal: AbortSignal;
}

// Exec has no working directory or environment parameters: a small sh
// prologue sets both, then replaces itself with the command.
const PROLOGUE = `cd -- "$1" || exit 126; shift; n=$1; shift
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
exec "$@"`;

// Under v4 stdin cannot end while output still flows, so stdin travels as
// frames (4-byte big-endian length, then bytes; length 0 is the end) and
// this decoder in the pod feeds the command and closes its stdin.
const UNFRAME = `import struct, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
r = sys.stdin.buffer
while True:
    h = r.read(4)
    if len(h) < 4:
        break
    n = struct.unpack(">I", h)[0]
    if n == 0:
        break
    d = r.read(n)
    try:
        p.stdin.write(d)
    except BrokenPipeError:
        break
    if len(d) < n:
        break
try:
    p.stdin.close()
except BrokenPipeError:
    pass
c = p.wait()
sys.exit(c if c >= 0 else 128 - c)`;

/** A command started in a pod. */
export interface StartedPodCommand {
  /** Resolves with the result; rejects with ABORTED or UNAVAILABLE (the pod or connection went away). */
  readonly result: Promise<ExecResult>;
  /** SIGKILLs the command's whole process tree in the pod. */
  kill(): Promise<void>;
}

/** Runs `command` in the pod and waits for it. */
export async function runPodCommand(host: PodCommandHost, command: PodCommand): Promise<ExecResult> {
  return (await startPodCommand(host, command)).result;
}

/**
 * Starts `command` in the pod: stdout and stderr kept as bytes up to the
 * cap, exit code from the status channel. A timeout or an abort kills the
 * whole process tree inside the pod (not only the connection).
 */
export async function startPodCommand(host: PodCommandHost, command: PodCommand): Promise<StartedPodCommand> {
  const running = new RunningCommand(command, (argv, signal) =>
    runPodCommand(host, { argv, workingDir: "/", maxOutputBytes: 4096, signal }).then(() => undefined),
  );
  const withStdin = command.stdin !== undefined;
  const protocol = withStdin ? await host.execProtocol() : V5_CHANNEL;
  const framed = withStdin && protocol !== V5_CHANNEL;
  const argv = [
    "/bin/sh",
    "-c",
    PROLOGUE,
    "agent-computer-exec",
    command.workingDir,
    String(running.env.length),
    ...running.env,
    ...(framed ? ["python3", "-c", UNFRAME] : []),
    ...command.argv,
  ];

  let session: PodExecSession | undefined;
  const resume = () => session?.resumeOutput();
  const onOutput = (name: "stdout" | "stderr", payload: Buffer): boolean => {
    // A sunk stdout (a home export) goes to the sink alone: `received` copies
    // each chunk for `onOutput`, which for a 200 MiB home was 200 MiB of
    // copies nobody read.
    if (name === "stdout" && command.stdoutSink) return command.stdoutSink(payload, resume);
    running.received(name, payload);
    running.keep(name, payload);
    return true;
  };

  try {
    session = await PodExecSession.open(host.kubeConfig, host.pod, argv, { stdin: withStdin, onOutput });
  } catch (error) {
    // A refused exec on a pod that is gone (404, or a pod being deleted) is PROVIDER_GONE.
    if (!(await host.podAlive().catch(() => true))) throw host.goneError();
    throw error;
  }
  const live = session;
  if (framed && live.canCloseStdin) throw new Error("framing chosen for a v5 connection");
  const kill = () => running.kill();

  let stdinFailure: unknown;
  if (withStdin) {
    void pumpStdin(live, command.stdin as Uint8Array | Readable, framed).catch((error: unknown) => {
      // The command ended first (it did not read all its input): not a failure.
      if (live.hasEnded && AgentComputerError.is(error, "UNAVAILABLE")) return;
      stdinFailure = error;
      void kill().catch(() => {});
    });
  }

  running.startTimeout();

  const finish = async (end: PodExecEnd): Promise<ExecResult> => {
    await running.settleTimeout();
    // A command killed by a signal, a failed exec or a cut connection: the
    // pod itself may have gone (deleted, evicted). Only then is it worth a
    // look, so an ordinary exit costs no extra API call.
    const suspicious = end.kind !== "exited" || (end.exitCode >= 128 && !running.timedOut);
    if (suspicious && !(await host.podAlive().catch(() => true))) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        "The pod went away while the command ran (deleted or evicted); reconnect to learn that it is gone, then provision a replacement and restore the home.",
        { details: { end: end.kind } },
      );
    }
    if (end.kind !== "exited" && !running.timedOut) {
      throw new AgentComputerError("UNAVAILABLE", `The command's exec connection broke: ${describeEnd(end)}.`, {
        details: { end: end.kind },
      });
    }
    return running.result(end.kind === "exited" ? end.exitCode : null);
  };

  const result = (async (): Promise<ExecResult> => {
    try {
      const outcome = await Promise.race([live.ended, running.aborted]);
      if (outcome === "aborted") {
        await kill().catch(() => {});
        live.close();
        return running.stopped();
      }
      live.close();
      if (stdinFailure !== undefined) throw stdinFailure;
      return await finish(outcome);
    } finally {
      running.finish();
    }
  })();

  return { result, kill };
}

/** Writes the command's stdin: plain then v5's close frame, or length-framed under v4. */
async function pumpStdin(session: PodExecSession, input: Uint8Array | Readable, framed: boolean): Promise<void> {
  const write = async (chunk: Uint8Array) => {
    if (!framed) return session.writeStdin(chunk);
    for (let offset = 0; offset < chunk.length; offset += STDIN_CHUNK) {
      const part = chunk.subarray(offset, offset + STDIN_CHUNK);
      const frame = Buffer.allocUnsafe(part.length + 4);
      frame.writeUInt32BE(part.length, 0);
      frame.set(part, 4);
      await session.writeStdin(frame);
    }
  };
  const end = () => (framed ? session.writeStdin(Buffer.alloc(4)) : session.closeStdin());
  if (input instanceof Uint8Array) {
    if (input.length > 0) await write(input);
  } else {
    const iterator = input[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await iterator.next();
      } catch (error) {
        // The source failed (a refused archive): end stdin too, so the command
        // sees end of input and exits even when the kill raced its start.
        await end().catch(() => {});
        throw error;
      }
      if (next.done) break;
      const chunk = next.value;
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
      if (bytes.length === 0) continue;
      try {
        await write(bytes);
      } catch (error) {
        // The connection failed: let the source clean up, as for-await would.
        await iterator.return?.().catch(() => {});
        throw error;
      }
    }
  }
  await end();
}
