import {
  AgentComputerError,
  ERROR_CODES,
  type ErrorCode,
  type ExecResult,
  type Machine,
  type OpContext,
  remainingMs,
} from "@agent-computer/core";

/** One JSON line the in-computer `desktop` command printed. */
export type DesktopCommandLine = Record<string, unknown> & {
  ok?: boolean;
  error?: { code?: string; message?: string };
};

export interface DesktopCommandRun {
  /** Every JSON line printed, in order (act prints one per action, then a summary). */
  readonly lines: DesktopCommandLine[];
  /** The last line when it is a successful summary; undefined when the command was cut. */
  readonly summary?: DesktopCommandLine;
  readonly result: ExecResult;
}

/** Observations carry a base64 PNG; a 7680x4320 screen can run to tens of MB. */
const MAX_OUTPUT_BYTES = 96 * 1024 * 1024;

/**
 * Runs the in-computer `desktop` command through the machine's exec and
 * parses its JSON. A reported failure is rethrown as the same
 * `AgentComputerError` code; a cut or crashed command as UNAVAILABLE or
 * TIMEOUT. `allowCut` leaves a timed-out run to the caller (act reads the
 * lines that did arrive).
 */
export async function runDesktopCommand(
  machine: Pick<Machine, "exec">,
  command: readonly string[],
  args: string[],
  ctx: OpContext,
  options: { defaultTimeoutMs: number; stdin?: Uint8Array<ArrayBuffer>; allowCut?: boolean },
): Promise<DesktopCommandRun> {
  const left = remainingMs(ctx);
  const timeoutMs = Math.max(1, Math.floor(Math.min(left, options.defaultTimeoutMs)));
  const result = await machine.exec(
    {
      argv: [...command, ...args],
      timeoutMs,
      maxOutputBytes: MAX_OUTPUT_BYTES,
      ...(options.stdin ? { stdin: options.stdin } : {}),
    },
    ctx,
  );
  const lines: DesktopCommandLine[] = [];
  for (const text of Buffer.from(result.stdout).toString("utf8").split("\n")) {
    if (!text.trim()) continue;
    try {
      lines.push(JSON.parse(text) as DesktopCommandLine);
    } catch {
      // A line cut by the timeout: the lines before it still count.
    }
  }
  const last = lines.at(-1);
  if (last?.ok === false) throw reportedError(last);
  if (last?.ok === true) return { lines, summary: last, result };
  if (options.allowCut && result.timedOut) return { lines, result };
  if (result.timedOut) {
    throw new AgentComputerError("TIMEOUT", `The desktop command "${args[0]}" did not finish within ${timeoutMs} ms.`);
  }
  if (result.truncated) {
    throw new AgentComputerError(
      "LIMIT_EXCEEDED",
      `The desktop command "${args[0]}" printed more than ${MAX_OUTPUT_BYTES} bytes.`,
    );
  }
  const stderr = Buffer.from(result.stderr).toString("utf8").trim().split("\n").slice(-3).join(" ").slice(0, 400);
  if (result.exitCode === 127 || /not found|No such file/.test(stderr)) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `This computer has no desktop command (${command.join(" ")}); use the agent-computer image or copy the desktop runtime in.`,
    );
  }
  throw new AgentComputerError(
    "UNAVAILABLE",
    `The desktop command "${args[0]}" failed (exit ${result.exitCode})${stderr ? `: ${stderr}` : ""}.`,
  );
}

function reportedError(line: DesktopCommandLine): AgentComputerError {
  const code = (ERROR_CODES as readonly string[]).includes(line.error?.code ?? "")
    ? (line.error?.code as ErrorCode)
    : "UNAVAILABLE";
  return new AgentComputerError(code, line.error?.message ?? "The desktop command failed.");
}
