import {
  AgentComputerError,
  ERROR_CODES,
  type ErrorCode,
  type Machine,
  type OpContext,
  remainingMs,
} from "@agent-computer/core";

/** One JSON line the in-computer `desktop` verbs printed. */
export type DesktopCommandLine = Record<string, unknown> & {
  ok?: boolean;
  error?: { code?: string; message?: string };
};

export interface DesktopCommandRun {
  /** Every JSON line printed, in order (act prints one per action, then a summary). */
  readonly lines: DesktopCommandLine[];
  /** The last line when it is a successful summary; undefined when the call was cut. */
  readonly summary?: DesktopCommandLine;
  /** Why a call run with `allowCut` ended early (its deadline, or a dropped connection). */
  readonly cut?: { readonly code: ErrorCode; readonly message: string };
}

export interface DesktopCallOptions {
  readonly defaultTimeoutMs: number;
  readonly stdin?: Uint8Array<ArrayBuffer>;
  /** Leave a cut call to the caller, who reads the lines that did arrive (act). */
  readonly allowCut?: boolean;
}

/** Observations carry a base64 image; a 7680x4320 screen can run to tens of MB. */
const MAX_OUTPUT_BYTES = 96 * 1024 * 1024;

/** The caller's deadline or the verb's own default, whichever is sooner. */
export function callTimeoutMs(ctx: OpContext, defaultTimeoutMs: number): number {
  return Math.max(1, Math.floor(Math.min(remainingMs(ctx), defaultTimeoutMs)));
}

/**
 * Runs the in-computer `desktop` command through the machine's exec (one
 * process per call: the fallback where the resident service cannot be
 * reached, see desktop-channel.ts) and reads its lines as `settleLines` does.
 */
export async function runDesktopCommand(
  machine: Pick<Machine, "exec">,
  command: readonly string[],
  args: string[],
  ctx: OpContext,
  options: DesktopCallOptions,
): Promise<DesktopCommandRun> {
  const timeoutMs = callTimeoutMs(ctx, options.defaultTimeoutMs);
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
  const verb = args[0];
  const settled = settleLines(
    lines,
    options.allowCut === true,
    result.timedOut ? timedOut(verb, timeoutMs) : undefined,
  );
  if (settled) return settled;
  if (result.truncated) {
    throw new AgentComputerError(
      "LIMIT_EXCEEDED",
      `The desktop command "${verb}" printed more than ${MAX_OUTPUT_BYTES} bytes.`,
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
    `The desktop command "${verb}" failed (exit ${result.exitCode})${stderr ? `: ${stderr}` : ""}.`,
  );
}

export const timedOut = (verb: string | undefined, timeoutMs: number) => ({
  code: "TIMEOUT" as const,
  message: `The desktop call "${verb}" did not finish within ${timeoutMs} ms.`,
});

/**
 * What a verb's lines mean, however they travelled: a reported failure is
 * rethrown with its code, a summary returned; a cut call is returned to a
 * caller that allows it, else thrown with the cut's code. Undefined when
 * the lines say nothing (the caller explains why).
 */
export function settleLines(
  lines: DesktopCommandLine[],
  allowCut: boolean,
  cut: DesktopCommandRun["cut"] | undefined,
): DesktopCommandRun | undefined {
  const last = lines.at(-1);
  if (last?.ok === false) throw reportedError(last);
  if (last?.ok === true) return { lines, summary: last };
  if (!cut) return undefined;
  if (allowCut) return { lines, cut };
  throw new AgentComputerError(cut.code, cut.message);
}

function reportedError(line: DesktopCommandLine): AgentComputerError {
  const code = (ERROR_CODES as readonly string[]).includes(line.error?.code ?? "")
    ? (line.error?.code as ErrorCode)
    : "UNAVAILABLE";
  return new AgentComputerError(code, line.error?.message ?? "The desktop command failed.");
}
