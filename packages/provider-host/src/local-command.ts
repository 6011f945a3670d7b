import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import type { HostUser } from "./host-provider-options.js";

/** After the main process exits, how long background children may keep the output open. */
const DRAIN_AFTER_EXIT_MS = 150;
/** After the main process exits with no child left, how long the output still in flight may take. */
const IN_FLIGHT_AFTER_EXIT_MS = 10_000;

/** A command to run on this host as a host computer's user. */
export interface LocalCommand extends MachineCommand {
  /** The whole environment (nothing of the app's is added). */
  env: Record<string, string>;
  /** Another user to run as (the app runs as root), or the app's own. */
  user?: HostUser;
  /** Fires on the caller's abort or deadline; its reason is what the run throws. */
  signal: AbortSignal;
}

/**
 * Runs `command` on this host with core's `RunningCommand` bookkeeping, as
 * every provider does over its own transport: its marker finds the
 * command's process tree (also children that left its process group), so a
 * timeout or an abort kills the whole tree, and output is kept up to the
 * cap. The transport here is a child process.
 */
export async function runLocalCommand(command: LocalCommand): Promise<ExecResult> {
  const running = new RunningCommand(command, async (argv) => {
    await runHelper(argv, command);
  });
  const env = Object.fromEntries(running.env.map((line) => splitVariable(line)));
  const child = spawn(command.argv[0] as string, command.argv.slice(1), {
    cwd: command.workingDir,
    env,
    // Its own process group: a terminal's Ctrl-C meant for the app never reaches it.
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
    ...(command.user ? { uid: command.user.uid, gid: command.user.gid } : {}),
  });
  const started = new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error) => reject(startFailure(error as NodeJS.ErrnoException, command)));
  });
  for (const name of ["stdout", "stderr"] as const) {
    child[name].on("data", (chunk: Buffer) => {
      running.received(name, chunk);
      running.keep(name, chunk);
    });
  }
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const closed = new Promise<"closed">((resolve) => child.once("close", () => resolve("closed")));
  try {
    await started;
    feedStdin(child.stdin, command.stdin);
    running.startTimeout();
    const outcome = await Promise.race([exit.then(() => "exited" as const), running.aborted]);
    if (outcome === "aborted") {
      await running.kill().catch(() => {});
      child.stdout.destroy();
      child.stderr.destroy();
      return running.stopped();
    }
    // A background child may hold the output open after the main process
    // exited: it does not hold the result (provider-docker's container-command.ts).
    const drained = await Promise.race([closed, delay(DRAIN_AFTER_EXIT_MS)]);
    if (drained !== "closed") {
      const childLeft = (await runHelper(running.survivorsArgv(), command).catch(() => 0)) === 0;
      if (!childLeft) await Promise.race([closed, delay(IN_FLIGHT_AFTER_EXIT_MS)]);
    }
    child.stdout.destroy();
    child.stderr.destroy();
    await running.settleTimeout();
    if (command.signal.aborted) {
      await running.kill().catch(() => {});
      throw running.abortError();
    }
    return running.result(await exit);
  } finally {
    running.finish();
  }
}

/** Runs a helper (the kill-tree or survivors script) as the command's user; its exit code. */
function runHelper(argv: string[], command: LocalCommand): Promise<number> {
  return new Promise((resolve, reject) => {
    const helper = spawn(argv[0] as string, argv.slice(1), {
      cwd: "/",
      env: { PATH: command.env.PATH ?? "/usr/bin:/bin" },
      stdio: "ignore",
      ...(command.user ? { uid: command.user.uid, gid: command.user.gid } : {}),
    });
    helper.once("error", reject);
    helper.once("exit", (code) => resolve(code ?? 1));
  });
}

function feedStdin(
  stdin: NodeJS.WritableStream & { on(e: "error", l: () => void): unknown },
  input?: Uint8Array | Readable,
) {
  // A command that ignores stdin may close it early.
  stdin.on("error", () => {});
  if (input === undefined) stdin.end();
  else if (input instanceof Uint8Array) stdin.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  else input.pipe(stdin);
}

function splitVariable(line: string): [string, string] {
  const at = line.indexOf("=");
  return [line.slice(0, at), line.slice(at + 1)];
}

function startFailure(error: NodeJS.ErrnoException, command: LocalCommand): AgentComputerError {
  if (error.code === "ENOENT") {
    return new AgentComputerError(
      "NOT_FOUND",
      `The program "${command.argv[0]}" was not found on this host, or the working folder is missing.`,
    );
  }
  if (error.code === "EACCES" || error.code === "EPERM") {
    return new AgentComputerError(
      "UNAVAILABLE",
      `The command could not start (${error.code}): the computer's user may not reach its working folder ${command.workingDir} or run "${command.argv[0]}".`,
      { cause: error, retryable: false },
    );
  }
  return new AgentComputerError("UNAVAILABLE", `The command could not start: ${error.message}`, { cause: error });
}

const delay = (ms: number) => new Promise<"waited">((resolve) => setTimeout(() => resolve("waited"), ms).unref());
