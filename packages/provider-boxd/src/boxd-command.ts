import type { Readable } from "node:stream";
import { AgentComputerError, type ExecResult } from "@agent-computer/core";
import { type MachineCommand, RunningCommand } from "@agent-computer/core/provider-utils";
import { shellQuote } from "@agent-computer/provider-kit";
import * as grpc from "@grpc/grpc-js";
import type { BoxdClient } from "./boxd-client.js";
import type { BoxdMessage } from "./boxd-definition.js";

/** A command to run on a boxd machine over Exec. */
export interface BoxdCommand extends MachineCommand {
  /** Fires on the caller's abort or deadline; its reason is what the run throws. */
  signal: AbortSignal;
  /** Takes stdout instead of keeping it (a download); return false to pause the call until `resume`. */
  stdoutSink?: (chunk: Buffer, resume: () => void) => boolean;
}

/** Stdin chunks stay far below gRPC's 4 MiB message cap. */
const STDIN_CHUNK_BYTES = 256 * 1024;

/**
 * Exec's command is one string (ExecChunk.command) that the service runs
 * as the machine's user from its home: the argv, working directory and
 * environment go in one quoted line, so the line means the same to a
 * shell as the argv does to us.
 */
export function commandLineOf(command: Pick<MachineCommand, "argv" | "workingDir">, env: string[]): string {
  const quoted = (words: string[]) => words.map(shellQuote).join(" ");
  return `cd -- ${shellQuote(command.workingDir)} || exit 126; exec env ${quoted(env)} ${quoted(command.argv)}`;
}

/**
 * The machine is not running (suspended, stopped): the Exec call was
 * refused before the command started (the public fake's FAILED_PRECONDITION
 * "is not running", discobox-ai/vm fakeapi_test.go Exec).
 */
export class MachineNotRunning extends Error {}

/**
 * Runs `command` on machine `vm` over one bidirectional Exec call
 * (proto/boxd-api.proto, ExecChunk): the first chunk names the machine and
 * the line, stdin follows in chunks and a half-close ends it; data chunks
 * are stdout or, marked, stderr; the last chunk's exit_code is the exit
 * code. A timeout or abort cancels the call (the service kills the
 * command's process group) and kills the command's process tree by its
 * marker too (RunningCommand), for children that left the group.
 */
export async function runBoxdCommand(client: BoxdClient, vm: string, command: BoxdCommand): Promise<ExecResult> {
  const running = new RunningCommand(command, async (argv, signal) => {
    await runBoxdCommand(client, vm, { argv, workingDir: "/", maxOutputBytes: 4096, signal });
  });
  const call = await client.openExec(command.signal);
  let sawOutput = false;
  let exitCode: number | null = null;
  let stdinFailure: unknown;

  const ended = new Promise<{ ok: true } | { ok: false; error: grpc.ServiceError }>((resolve) => {
    call.on("data", (chunk: BoxdMessage) => {
      const data = chunk.data as Buffer;
      exitCode = Number(chunk.exit_code);
      if (data.length === 0) return;
      sawOutput = true;
      const stream = chunk.is_stderr ? "stderr" : "stdout";
      running.received(stream, data);
      if (stream === "stdout" && command.stdoutSink) {
        if (!command.stdoutSink(data, () => call.resume())) call.pause();
        return;
      }
      running.keep(stream, data);
    });
    call.on("error", (error: grpc.ServiceError) => resolve({ ok: false, error }));
    call.on("end", () => resolve({ ok: true }));
  });

  call.write({ vm_id: vm, command: commandLineOf(command, running.env) });
  void sendStdin(call, command.stdin).catch((error: unknown) => {
    stdinFailure = error;
    void running.kill().catch(() => {});
  });
  running.startTimeout();

  try {
    const outcome = await Promise.race([ended, running.aborted]);
    if (outcome === "aborted") {
      call.cancel();
      await running.kill().catch(() => {});
      return running.stopped();
    }
    await running.settleTimeout();
    if (!outcome.ok) {
      if (running.timedOut) return running.result(null);
      if (outcome.error.code === grpc.status.FAILED_PRECONDITION && !sawOutput) {
        throw new MachineNotRunning(outcome.error.details);
      }
      throw client.failure(outcome.error, "run a command");
    }
    if (stdinFailure !== undefined) throw stdinFailure;
    return running.result(exitCode ?? 0);
  } finally {
    running.finish();
  }
}

/** Writes stdin as chunks marked stdin, then half-closes the call: the command's end of input. */
async function sendStdin(
  call: grpc.ClientDuplexStream<BoxdMessage, BoxdMessage>,
  input: Uint8Array | Readable | undefined,
) {
  const write = (bytes: Uint8Array) =>
    new Promise<void>((resolve) => {
      for (let offset = 0; offset < bytes.length; offset += STDIN_CHUNK_BYTES) {
        const part = Buffer.from(bytes.subarray(offset, offset + STDIN_CHUNK_BYTES));
        if (!call.write({ data: part, stdin: true }) && offset + STDIN_CHUNK_BYTES >= bytes.length) {
          call.once("drain", resolve);
          return;
        }
      }
      resolve();
    });
  try {
    if (input instanceof Uint8Array) {
      if (input.length > 0) await write(input);
    } else if (input) {
      for await (const chunk of input) {
        const bytes = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
        if (bytes.length > 0) await write(bytes);
      }
    }
  } finally {
    // Also after a failed source: the command sees end of input and can exit.
    call.end();
  }
}

/** An Exec that failed as a whole, not one with a bad exit code: worth naming in errors. */
export function execFailure(result: ExecResult, what: string, redact: (text: string) => string): AgentComputerError {
  const stderr = redact(Buffer.from(result.stderr).toString("utf8").slice(-400));
  return new AgentComputerError(
    "UNAVAILABLE",
    `boxd could not ${what} (${result.timedOut ? "timed out" : `exit ${result.exitCode}`}): ${stderr || "no message"}`,
    { retryable: false },
  );
}
