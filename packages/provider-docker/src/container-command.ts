import type { Duplex, Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type Docker from "dockerode";
import { engineFailure, engineStatus } from "./engine-failure.js";
import { EngineOutputDemuxer } from "./engine-output-demuxer.js";

/** A command to run in a container through the Engine exec API. */
export interface ContainerCommand extends MachineCommand {
  /** "uid:gid" inside the container. */
  user: string;
  /** Fires on the caller's abort or deadline; its reason is what we throw. */
  signal: AbortSignal;
}

/** After the main process exits, how long background children may keep the output open. */
const DRAIN_AFTER_EXIT_MS = 150;
/** After the main process exits with no child left, how long the output still in flight may take. */
const IN_FLIGHT_AFTER_EXIT_MS = 10_000;
/** How often a long command's exec is polled to notice its main process exited. */
const EXIT_POLL_MS = 1000;

/**
 * Runs `command` in `container`: demuxed stdout/stderr kept as bytes up to
 * the cap, exit code from the exec's inspect. A timeout or an abort kills
 * the whole process tree inside the container (not only the stream).
 */
export async function runContainerCommand(container: Docker.Container, command: ContainerCommand): Promise<ExecResult> {
  const running = new RunningCommand(command, async (argv) => {
    await runHelper(container, argv, command.user);
  });
  const withStdin = command.stdin !== undefined;
  const exec = await container.exec({
    Cmd: command.argv,
    Env: running.env,
    WorkingDir: command.workingDir,
    User: command.user,
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = (await exec.start({ hijack: withStdin, stdin: withStdin })) as Duplex;

  const demuxer = new EngineOutputDemuxer((name, payload) => {
    running.received(name, payload);
    running.keep(name, payload);
  });

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

  running.startTimeout();
  // A background child may hold the output open after the main process
  // exits; polling the exec notices the exit so the call does not hang.
  // With no child left, what is still in the pipe and the engine is on its
  // way and ends the stream: it is waited for, so the tail of a large
  // output (a file read) is never cut.
  let polling = true;
  const exited = (async (): Promise<"exited"> => {
    for (;;) {
      await new Promise((r) => setTimeout(r, EXIT_POLL_MS));
      if (!polling) return new Promise<"exited">(() => {});
      const state = await exec.inspect().catch(() => undefined);
      if (state && !state.Running) {
        const childLeft = (await runHelper(container, running.survivorsArgv(), command.user).catch(() => 0)) === 0;
        await new Promise((r) => setTimeout(r, childLeft ? DRAIN_AFTER_EXIT_MS : IN_FLIGHT_AFTER_EXIT_MS));
        return "exited";
      }
    }
  })();

  try {
    const outcome = await Promise.race([ended, running.aborted, exited]);
    if (outcome === "aborted") {
      await running.kill().catch(() => {});
      stream.destroy();
      return running.stopped();
    }
    await running.settleTimeout();
    stream.destroy();
    let state = await inspectExec(exec);
    // Output closed but the main process lives on (it closed its own
    // stdout/stderr): wait for its exit, still under the abort and timeout.
    while (state.Running && outcome !== "cut" && !command.signal.aborted) {
      await new Promise((r) => setTimeout(r, 200));
      state = await inspectExec(exec);
    }
    if (command.signal.aborted) {
      await running.kill().catch(() => {});
      throw running.abortError();
    }
    if (outcome === "cut" && state.Running) {
      throw new AgentComputerError("UNAVAILABLE", "The connection to the Docker engine broke while the command ran.");
    }
    if (!running.timedOut && (state.ExitCode === null || state.ExitCode === undefined || state.ExitCode === -1)) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        "The machine stopped while the command ran, so it has no exit code; reconnect to resume the machine or learn that it is gone.",
      );
    }
    return running.result(state.ExitCode as number);
  } finally {
    polling = false;
    running.finish();
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

/** Runs a helper (the kill-tree or survivors script) in the container and gives its exit code. */
async function runHelper(container: Docker.Container, argv: string[], user: string): Promise<number> {
  // As the command's own user, not root: without CAP_SYS_PTRACE (Docker
  // drops it) root may not read another user's /proc/<pid>/environ.
  const exec = await container.exec({
    Cmd: argv,
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
  return (await exec.inspect()).ExitCode ?? -1;
}
