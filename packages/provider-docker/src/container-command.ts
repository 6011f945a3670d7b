import { randomUUID } from "node:crypto";
import type { Duplex, Readable } from "node:stream";
import { AgentComputerError, type ExecResult, type OutputListener } from "@agent-computer/core";
import type Docker from "dockerode";
import { engineFailure, engineStatus } from "./engine-failure.js";
import { EngineOutputDemuxer } from "./engine-output-demuxer.js";

/** A command to run in a container through the Engine exec API. */
export interface ContainerCommand {
  argv: string[];
  /** Absolute, inside the container. */
  workingDir: string;
  env?: Record<string, string>;
  user: string;
  stdin?: Uint8Array | Readable;
  timeoutMs?: number;
  /** Cap on each of stdout and stderr kept (Infinity keeps all). */
  maxOutputBytes: number;
  onOutput?: OutputListener;
  /** Fires on the caller's abort or deadline; its reason is what we throw. */
  signal: AbortSignal;
}

/**
 * Every command carries this variable with a fresh id. Children inherit it,
 * also ones that start their own session or process group, so a kill finds
 * the whole tree by reading /proc/<pid>/environ inside the container.
 */
const MARKER = "AGENT_COMPUTER_EXEC";

// Two passes: a process forked while the first pass ran is caught by the second.
const KILL_TREE = `for pass in 1 2; do for p in /proc/[0-9]*; do
  grep -qzx "${MARKER}=$1" "$p/environ" 2>/dev/null && kill -KILL "\${p#/proc/}" 2>/dev/null
done; done; true`;

/** After the main process exits, how long background children may keep the output open. */
const DRAIN_AFTER_EXIT_MS = 150;
/** How often a long command's exec is polled to notice its main process exited. */
const EXIT_POLL_MS = 1000;

/**
 * Runs `command` in `container`: demuxed stdout/stderr kept as bytes up to
 * the cap, exit code from the exec's inspect. A timeout or an abort kills
 * the whole process tree inside the container (not only the stream).
 */
export async function runContainerCommand(container: Docker.Container, command: ContainerCommand): Promise<ExecResult> {
  const started = performance.now();
  const marker = randomUUID();
  const env = Object.entries({ ...command.env, [MARKER]: marker }).map(([k, v]) => `${k}=${v}`);
  const withStdin = command.stdin !== undefined;
  const exec = await container.exec({
    Cmd: command.argv,
    Env: env,
    WorkingDir: command.workingDir,
    User: command.user,
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = (await exec.start({ hijack: withStdin, stdin: withStdin })) as Duplex;

  const outputs = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const kept = { stdout: 0, stderr: 0 };
  let truncated = false;
  const demuxer = new EngineOutputDemuxer((name, payload) => {
    command.onOutput?.(name, new Uint8Array(payload));
    const room = command.maxOutputBytes - kept[name];
    if (room <= 0) {
      truncated = true;
      return;
    }
    const take = Math.min(room, payload.length);
    if (take < payload.length) truncated = true;
    // Copy: the demuxer's buffer is reused by later frames.
    outputs[name].push(Buffer.from(payload.subarray(0, take)));
    kept[name] += take;
  });

  let timedOut = false;
  let killing: Promise<void> | undefined;
  const killTree = () => {
    killing ??= killProcessTree(container, marker, command.user);
    return killing;
  };

  const ended = new Promise<"ended" | "cut">((resolve) => {
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    stream.once("end", () => resolve("ended"));
    stream.once("close", () => resolve("ended"));
    stream.once("error", () => resolve("cut"));
  });

  if (withStdin) {
    stream.on("error", () => {});
    const input = command.stdin as Uint8Array | Readable;
    if (input instanceof Uint8Array) stream.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
    else input.pipe(stream);
  }

  const timer =
    command.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          void killTree().catch(() => {});
        }, command.timeoutMs);
  const aborted = new Promise<"aborted">((resolve) => {
    if (command.signal.aborted) resolve("aborted");
    else command.signal.addEventListener("abort", () => resolve("aborted"), { once: true });
  });
  // A background child may hold the output open after the main process
  // exits; polling the exec notices the exit so the call does not hang.
  let polling = true;
  const exited = (async (): Promise<"exited"> => {
    for (;;) {
      await new Promise((r) => setTimeout(r, EXIT_POLL_MS));
      if (!polling) return new Promise<"exited">(() => {});
      const state = await exec.inspect().catch(() => undefined);
      if (state && !state.Running) {
        await new Promise((r) => setTimeout(r, DRAIN_AFTER_EXIT_MS));
        return "exited";
      }
    }
  })();

  try {
    const outcome = await Promise.race([ended, aborted, exited]);
    if (outcome === "aborted") {
      await killTree().catch(() => {});
      stream.destroy();
      throw command.signal.reason ?? new AgentComputerError("ABORTED", "The command was aborted.");
    }
    if (timedOut) await killing?.catch(() => {});
    stream.destroy();
    let state = await inspectExec(exec);
    // Output closed but the main process lives on (it closed its own
    // stdout/stderr): wait for its exit, still under the abort and timeout.
    while (state.Running && outcome !== "cut" && !command.signal.aborted) {
      await new Promise((r) => setTimeout(r, 200));
      state = await inspectExec(exec);
    }
    if (command.signal.aborted) {
      await killTree().catch(() => {});
      throw command.signal.reason ?? new AgentComputerError("ABORTED", "The command was aborted.");
    }
    if (outcome === "cut" && state.Running) {
      throw new AgentComputerError("UNAVAILABLE", "The connection to the Docker engine broke while the command ran.");
    }
    if (!timedOut && (state.ExitCode === null || state.ExitCode === undefined || state.ExitCode === -1)) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        "The machine stopped while the command ran, so it has no exit code; reconnect to resume the machine or learn that it is gone.",
      );
    }
    return {
      exitCode: timedOut ? null : (state.ExitCode as number),
      stdout: new Uint8Array(Buffer.concat(outputs.stdout)),
      stderr: new Uint8Array(Buffer.concat(outputs.stderr)),
      timedOut,
      truncated,
      durationMs: performance.now() - started,
    };
  } finally {
    polling = false;
    if (timer) clearTimeout(timer);
  }
}

async function inspectExec(exec: Docker.Exec): Promise<Docker.ExecInspectInfo> {
  return exec.inspect().catch((error: unknown) => {
    if (engineStatus(error) === 404) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        "The machine went away while the command ran (its container was removed); reconnect to learn whether it is gone.",
        { cause: error },
      );
    }
    throw engineFailure(error, "read the command's exit code");
  });
}

/** SIGKILLs every process in the container that carries `marker`. */
async function killProcessTree(container: Docker.Container, marker: string, user: string): Promise<void> {
  // As the command's own user, not root: without CAP_SYS_PTRACE (Docker
  // drops it) root may not read another user's /proc/<pid>/environ.
  const exec = await container.exec({
    Cmd: ["sh", "-c", KILL_TREE, "kill-tree", marker],
    User: user,
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = (await exec.start({ hijack: false })) as Duplex;
  await new Promise<void>((resolve) => {
    stream.on("data", () => {});
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", () => resolve());
  });
}
