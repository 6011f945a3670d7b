import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import { shellQuote, type WakeOption } from "@agent-computer/provider-kit";
import type { Sandbox } from "@daytonaio/sdk";
import { FramedStream, SESSION_FRAMER } from "./session-framer.js";

/** What running a command in a sandbox needs from its machine. */
export interface SessionCommandHost {
  /**
   * Makes one toolbox call: while the sandbox is stopped, archived or in a
   * state change it is started and the call retried (within the call's
   * deadline); a missing sandbox is PROVIDER_GONE, a refused key UNAVAILABLE.
   * With `wake: false` nothing is started: transient answers are retried
   * only while the sandbox is started, else the call's failure stands.
   */
  toolbox<T>(
    what: string,
    signal: AbortSignal,
    call: (sandbox: Sandbox) => Promise<T>,
    options?: WakeOption,
  ): Promise<T>;
}

/** The host whose every toolbox call leaves a stopped sandbox stopped (cleanup's). */
export function withoutWaking(host: SessionCommandHost): SessionCommandHost {
  return { toolbox: (what, signal, call) => host.toolbox(what, signal, call, { wake: false }) };
}

/** A command to run in a sandbox. */
export interface SessionCommand extends MachineCommand {
  /** Takes stdout instead of keeping it (the home's export stream). */
  stdoutSink?: (chunk: Buffer) => void;
  /** Fires on the caller's abort or deadline; its reason is what we throw. */
  signal: AbortSignal;
}

/** A command started in a sandbox. */
export interface StartedSessionCommand {
  readonly result: Promise<ExecResult>;
  /** SIGKILLs the command's whole process tree in the sandbox. */
  kill(): Promise<void>;
}

/** Raw bytes of stdin per input call (base64 makes it a third larger). */
const STDIN_CHUNK = 384 * 1024;

export async function runSessionCommand(host: SessionCommandHost, command: SessionCommand): Promise<ExecResult> {
  return (await startSessionCommand(host, command)).result;
}

/**
 * Runs `command` through the toolbox sessions API (docs/architecture.md
 * §9): a session of its own, the command started asynchronously under the
 * framer (session-framer.ts), its output followed over the logs websocket
 * and decoded back to bytes, stdin sent through the input call. Not
 * `executeCommand`: it merges stdout and stderr (Daytona #2067). A timeout
 * or an abort kills the command's whole process tree; a log stream that
 * drops while the command still runs kills it too and fails UNAVAILABLE,
 * so no process outlives the call.
 */
export async function startSessionCommand(
  host: SessionCommandHost,
  command: SessionCommand,
): Promise<StartedSessionCommand> {
  const running = new RunningCommand(command, (argv) =>
    runSessionCommand(withoutWaking(host), {
      argv,
      workingDir: "/",
      maxOutputBytes: 4096,
      signal: AbortSignal.timeout(30_000),
    }).then(() => undefined),
  );
  const withStdin = command.stdin !== undefined;
  const line = [
    "env",
    ...running.env,
    "python3",
    "-c",
    SESSION_FRAMER,
    withStdin ? "1" : "0",
    command.workingDir,
    ...command.argv,
  ]
    .map(shellQuote)
    .join(" ");
  const sessionId = `agent-computer-${randomBytes(8).toString("hex")}`;
  const signal = command.signal;
  const onStdout = (bytes: Buffer) => {
    running.received("stdout", bytes);
    if (command.stdoutSink) command.stdoutSink(bytes);
    else running.keep("stdout", bytes);
  };
  const onStderr = (bytes: Buffer) => {
    running.received("stderr", bytes);
    running.keep("stderr", bytes);
  };
  let stdout = new FramedStream(onStdout);
  let stderr = new FramedStream(onStderr);

  await host.toolbox("start a command session", signal, (sandbox) => sandbox.process.createSession(sessionId));
  const deleteSession = () =>
    void host
      .toolbox(
        "end a command session",
        AbortSignal.timeout(30_000),
        (sandbox) => sandbox.process.deleteSession(sessionId),
        { wake: false },
      )
      .catch(() => {});
  let cmdId: string;
  try {
    const started = await host.toolbox("start a command", signal, (sandbox) =>
      sandbox.process.executeSessionCommand(sessionId, { command: line, runAsync: true, suppressInputEcho: true }),
    );
    if (!started.cmdId) throw new AgentComputerError("UNAVAILABLE", "The toolbox started the command but named no id.");
    cmdId = started.cmdId;
  } catch (error) {
    deleteSession();
    throw error;
  }
  running.startTimeout();
  const kill = () => running.kill();

  let stdinFailure: unknown;
  let ended = false;
  if (withStdin) {
    void pumpStdin(host, sessionId, cmdId, command.stdin as Uint8Array | Readable, signal).catch((error: unknown) => {
      if (ended) return; // the command ended first (it did not read all its input)
      stdinFailure = error;
      void kill().catch(() => {});
    });
  }

  // Both streams' end lines arrived: the command is over. The daemon keeps
  // the log stream open a second longer (it ends a follow only after 50
  // empty 20 ms reads and an exit code: apps/daemon/internal/util/
  // log_reader.go ReadLogWithExitCode); deleting the session closes it.
  let framesEnded = () => {};
  const bothEnded = new Promise<"ended">((resolve) => {
    framesEnded = () => resolve("ended");
  });
  const checkEnded = () => {
    if (stdout.exitCode !== undefined && stderr.exitCode !== undefined) framesEnded();
  };
  const quiet = withoutWaking(host);
  const follow = quiet.toolbox("follow the command's output", signal, (sandbox) => {
    // A retried follow reads the log from its start again: pass over the lines already handled.
    stdout = stdout.resumed(onStdout);
    stderr = stderr.resumed(onStderr);
    const [out, err] = [stdout, stderr];
    return sandbox.process.getSessionCommandLogs(
      sessionId,
      cmdId,
      (text) => {
        out.push(text);
        checkEnded();
      },
      (text) => {
        err.push(text);
        checkEnded();
      },
    );
  });

  const finish = async (): Promise<ExecResult> => {
    if (stdout.exitCode === undefined && !running.timedOut) {
      // The log stream closed before the framer's last line: ask the toolbox
      // whether the command ended (then read the rest of its log) or the
      // stream dropped while it runs (then end it: no orphan).
      const state = await quiet.toolbox("look up the command", AbortSignal.timeout(30_000), (sandbox) =>
        sandbox.process.getSessionCommand(sessionId, cmdId),
      );
      if (state.exitCode === undefined || state.exitCode === null) {
        await kill().catch(() => {});
        throw new AgentComputerError(
          "UNAVAILABLE",
          "The command's log stream dropped while it ran; it was killed. Run it again.",
          { details: { stream: "logs" } },
        );
      }
      const logs = await quiet.toolbox("read the command's output", AbortSignal.timeout(60_000), (sandbox) =>
        sandbox.process.getSessionCommandLogs(sessionId, cmdId),
      );
      const restOut = new FramedStream(onStdout, stdout.lines);
      const restErr = new FramedStream(onStderr, stderr.lines);
      restOut.push(`${logs.stdout}\n`);
      restErr.push(`${logs.stderr}\n`);
      stdout.exitCode = restOut.exitCode ?? state.exitCode;
    }
    await running.settleTimeout();
    return running.result(running.timedOut ? null : (stdout.exitCode ?? null));
  };

  const result = (async (): Promise<ExecResult> => {
    try {
      const outcome = await Promise.race([follow.then(() => "ended" as const), bothEnded, running.aborted]);
      ended = true;
      if (outcome === "aborted") {
        await kill().catch(() => {});
        return running.stopped();
      }
      if (stdinFailure !== undefined) throw stdinFailure;
      return await finish();
    } finally {
      ended = true;
      running.finish();
      deleteSession();
    }
  })();
  // A follow that fails after an abort is not a second failure.
  follow.catch(() => {});
  return { result, kill };
}

/** Sends stdin as base64 lines, then the `.` line that closes the command's stdin. */
async function pumpStdin(
  host: SessionCommandHost,
  sessionId: string,
  cmdId: string,
  input: Uint8Array | Readable,
  signal: AbortSignal,
): Promise<void> {
  const send = (data: string) =>
    withoutWaking(host).toolbox("send the command's input", signal, (sandbox) =>
      sandbox.process.sendSessionCommandInput(sessionId, cmdId, data),
    );
  const write = async (chunk: Uint8Array) => {
    for (let offset = 0; offset < chunk.length; offset += STDIN_CHUNK) {
      await send(`${Buffer.from(chunk.subarray(offset, offset + STDIN_CHUNK)).toString("base64")}\n`);
    }
  };
  if (input instanceof Uint8Array) {
    if (input.length > 0) await write(input);
  } else {
    let pending: Buffer[] = [];
    let size = 0;
    for await (const chunk of input) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
      pending.push(bytes);
      size += bytes.length;
      if (size >= STDIN_CHUNK) {
        await write(Buffer.concat(pending));
        pending = [];
        size = 0;
      }
    }
    if (size > 0) await write(Buffer.concat(pending));
  }
  await send(".\n");
}
