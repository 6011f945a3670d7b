import type { Readable } from "node:stream";
import type { AgentComputerError, ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import WebSocket from "ws";

/**
 * Railway's exec bridge, as the official SDK (railway-ts-sdk
 * src/core/exec-ws-client.ts) and the CLI (railwayapp/cli
 * src/controllers/sandbox_exec.rs, "Wire protocol") speak it:
 *
 * - a WebSocket to the tcp-proxy's `/ws/exec`, offering the subprotocols
 *   `railway-shell` and the shell-scoped JWT (generateShellToken);
 * - first frame, text: `{"type":"init_exec","data":{"command","cwd"?,"env"?}}`;
 * - stdin as binary frames tagged 0x02 (the CLI's STREAM_STDIN), its end as
 *   `{"type":"stdin_close"}`; a signal as `{"type":"signal","data":{"signal"}}`;
 * - output as binary frames tagged 0x01 (stdout) and 0x03 (stderr);
 * - the end as text `{"type":"exit","data":{"exit_code","reason"}}`; a
 *   signalled process reports -1. A close before it: the outcome is unknown.
 */
export const SHELL_SUBPROTOCOL = "railway-shell";
const STDOUT = 0x01;
const STDIN = 0x02;
const STDERR = 0x03;
/** stdin goes in frames of at most this size (the SDK moves files in 64 KB frames). */
const STDIN_FRAME = 64 * 1024;
/** How long the kill of a command's tree may take before it is given up on. */
const KILL_TIMEOUT_MS = 15_000;

/** What a command needs of its machine. */
export interface ExecBridgeHost {
  /**
   * Opens the bridge for this machine's running instance (a fresh shell
   * token each time). Only a command's start may deploy a stopped machine
   * (`wake`): its cleanup (the tree kill) meets a stopped one with an
   * error, since its processes went with the stop.
   */
  open(signal: AbortSignal, options?: { wake?: boolean }): Promise<WebSocket>;
  /** What the bridge is asked to run for argv with env (as the computer's user: command-line-as.ts). */
  line(argv: string[], env: Record<string, string>): BridgeInit;
  /** The contract's error for a bridge that failed (the machine stopped, went, or refused). */
  failure(error: unknown, what: string): Promise<AgentComputerError>;
}

/** The command line and environment of an `init_exec`. */
export interface BridgeInit {
  command: string;
  env: Record<string, string>;
}

/** The environment of a RunningCommand as the bridge's map. */
function envMap(env: string[]): Record<string, string> {
  return Object.fromEntries(env.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
}

/** One exec on an open socket: output to the handlers, resolves with the exit code. */
function runOnSocket(
  socket: WebSocket,
  init: { command: string; cwd: string; env: Record<string, string> },
  stdin: Uint8Array | Readable | undefined,
  onOutput: (stream: "stdout" | "stderr", chunk: Uint8Array) => void,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        if (data.length <= 1) return;
        if (data[0] === STDOUT) onOutput("stdout", data.subarray(1));
        else if (data[0] === STDERR) onOutput("stderr", data.subarray(1));
        return;
      }
      let frame: { type?: string; data?: { exit_code?: number } };
      try {
        frame = JSON.parse(data.toString("utf8"));
      } catch {
        return; // the bridge's contract is lenient: unknown or malformed frames are ignored
      }
      if (frame.type === "exit") resolve(typeof frame.data?.exit_code === "number" ? frame.data.exit_code : 0);
    });
    socket.once("close", (code, reason) =>
      reject(
        new Error(
          `the exec bridge closed before the command's exit (code ${code}${reason.length ? `: ${reason}` : ""})`,
        ),
      ),
    );
    socket.once("error", reject);
    socket.send(JSON.stringify({ type: "init_exec", data: init }));
    void sendStdin(socket, stdin).catch(() => {
      // The command may exit before reading all of stdin; its result says what happened.
    });
  });
}

async function sendStdin(socket: WebSocket, stdin: Uint8Array | Readable | undefined): Promise<void> {
  const send = (bytes: Uint8Array) =>
    new Promise<void>((resolve, reject) => {
      const frame = Buffer.allocUnsafe(bytes.length + 1);
      frame[0] = STDIN;
      frame.set(bytes, 1);
      socket.send(frame, { binary: true }, (error) => (error ? reject(error) : resolve()));
    });
  if (stdin instanceof Uint8Array) {
    for (let at = 0; at < stdin.length; at += STDIN_FRAME) await send(stdin.subarray(at, at + STDIN_FRAME));
  } else if (stdin) {
    for await (const chunk of stdin) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
      for (let at = 0; at < bytes.length; at += STDIN_FRAME) await send(bytes.subarray(at, at + STDIN_FRAME));
    }
  }
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "stdin_close" }));
}

/** Runs a short helper (the tree kill) to its end, ignoring its output. */
async function runQuiet(host: ExecBridgeHost, argv: string[]): Promise<void> {
  const signal = AbortSignal.timeout(KILL_TIMEOUT_MS);
  const socket = await host.open(signal, { wake: false });
  try {
    await Promise.race([
      runOnSocket(socket, { ...host.line(argv, {}), cwd: "/" }, undefined, () => {}),
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
    ]);
  } finally {
    socket.close();
  }
}

/**
 * Runs `command` in the service's running instance over the exec bridge:
 * stdout and stderr as bytes, apart; stdin sent and closed; a non-zero exit
 * is a result. It carries RunningCommand's marker, so a timeout, an abort
 * or a cut socket kills its whole tree by a second exec (the bridge's own
 * signal reaches the process group only, and a closed socket may leave a
 * durable session running).
 */
export async function runBridgeCommand(
  host: ExecBridgeHost,
  command: MachineCommand & { signal: AbortSignal },
  what: string,
): Promise<ExecResult> {
  const running = new RunningCommand(command, (argv) => runQuiet(host, argv));
  let socket: WebSocket;
  try {
    socket = await host.open(command.signal);
  } catch (error) {
    if (command.signal.aborted) throw running.abortError();
    throw await host.failure(error, what);
  }
  running.startTimeout();
  const ended = runOnSocket(
    socket,
    { ...host.line(command.argv, envMap(running.env)), cwd: command.workingDir },
    command.stdin,
    (stream, chunk) => {
      running.received(stream, chunk);
      running.keep(stream, chunk);
    },
  );
  try {
    const outcome = await Promise.race([ended, running.aborted]);
    if (outcome === "aborted") {
      await running.kill().catch(() => {});
      return running.stopped();
    }
    await running.settleTimeout();
    return running.result(outcome);
  } catch (error) {
    if (command.signal.aborted) throw running.abortError();
    if (running.isStopFailure(error)) throw error;
    if (running.timedOut) {
      await running.settleTimeout();
      return running.result(null);
    }
    // A cut socket: the command may still run; its tree is killed before the failure is told.
    await running.kill().catch(() => {});
    throw await host.failure(error, what);
  } finally {
    running.finish();
    ended.catch(() => {});
    socket.close();
  }
}
