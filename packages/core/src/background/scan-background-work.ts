import { z } from "zod";
import type { ExecResult } from "../contract/exec-result.js";
import type { Machine } from "../contract/machine.js";
import { checkOpContext, loggerOf, type OpContext, remainingMs, throwIfDone } from "../contract/op-context.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { parseInput } from "../validation/parse-input.js";
import { type BackgroundCancelOptions, backgroundCancelOptionsSchema } from "./background-cancel-options.js";
import type { BackgroundWorkCancellation } from "./background-work-cancellation.js";
import { type BackgroundWorkOptions, backgroundWorkOptionsSchema } from "./background-work-options.js";
import type { BackgroundWorkScan } from "./background-work-scan.js";

/**
 * Where background work is marked, relative to the home: a job holds
 * `<home>/.agent-computer/background/<job>.marker` open (for example
 * `exec 9>>"$HOME/.agent-computer/background/build.marker"` before starting
 * it), and every process that inherits the descriptor holds the job.
 */
export const BACKGROUND_MARKER_DIR = ".agent-computer/background";

const holderSchema = z.object({
  pid: z.number().int().positive(),
  uid: z.number().int(),
  marker: z.string(),
  job: z.string(),
  deleted: z.boolean(),
  cmd: z.string(),
});
const unknownSchema = z.object({ status: z.literal("unknown"), reason: z.string() });
const scanSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("ok"), holders: z.array(holderSchema), unreadable: z.number().int().min(0) }),
  unknownSchema,
]);
const cancelSchema = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("ok"),
    holders: z.array(holderSchema),
    unreadable: z.number().int().min(0),
    signal: z.string(),
    signalled: z.array(z.number().int()),
    skipped: z.array(z.object({ pid: z.number().int(), reason: z.string() })),
  }),
  unknownSchema,
]);

/**
 * Finds the processes holding background-work markers on a computer, by
 * running the in-computer python3 scanner (it reads /proc/<pid>/fd links of
 * every process it may read, whatever their uid: inherited, duplicated and
 * deleted-but-open markers all count). Never throws for a failed scan: a
 * missing python3 (exit 127), an unreadable proc, a cut command or
 * unreadable output is `{ status: "unknown" }`. Only the caller's abort
 * is thrown.
 */
export async function scanBackgroundWork(
  machine: Pick<Machine, "exec" | "workspacePath">,
  ctx?: OpContext,
  opts: BackgroundWorkOptions = {},
): Promise<BackgroundWorkScan> {
  const options = parseInput(backgroundWorkOptionsSchema, opts, "BackgroundWorkOptions");
  const context = checkOpContext(ctx);
  throwIfDone(context, "background scan");
  const run = await runScanner(machine, options, [], context);
  if ("unknown" in run) return { status: "unknown", reason: run.unknown };
  const parsed = scanSchema.safeParse(run.output);
  if (!parsed.success) return { status: "unknown", reason: "the scanner's output was not a scan result" };
  loggerOf(context).info("background scan", {
    status: parsed.data.status,
    holders: parsed.data.status === "ok" ? parsed.data.holders.length : undefined,
  });
  return parsed.data;
}

/**
 * Signals the processes holding background-work markers (default TERM),
 * only after an `ok` scan, re-checking each pid's markers and start time
 * inside the computer right before its signal (a reused pid is skipped).
 * An `unknown` scan signals nothing.
 */
export async function cancelBackgroundWork(
  machine: Pick<Machine, "exec" | "workspacePath">,
  ctx?: OpContext,
  opts: BackgroundCancelOptions = {},
): Promise<BackgroundWorkCancellation> {
  const options = parseInput(backgroundCancelOptionsSchema, opts, "BackgroundCancelOptions");
  const context = checkOpContext(ctx);
  throwIfDone(context, "background cancel");
  const run = await runScanner(machine, options, ["--cancel", "--signal", options.signal], context);
  if ("unknown" in run) return { status: "unknown", reason: run.unknown, signalled: [], uncertain: run.cut };
  const parsed = cancelSchema.safeParse(run.output);
  if (!parsed.success) {
    return {
      status: "unknown",
      reason: "the scanner's output was not a cancel result; holders may have been signalled",
      signalled: [],
      uncertain: true,
    };
  }
  if (parsed.data.status === "unknown") return { ...parsed.data, signalled: [], uncertain: false };
  loggerOf(context).info("background cancel", {
    signal: parsed.data.signal,
    signalled: parsed.data.signalled.length,
    skipped: parsed.data.skipped.length,
  });
  return parsed.data;
}

/** The scanner's JSON, or why there is none (`cut`: it may have run partly). */
async function runScanner(
  machine: Pick<Machine, "exec" | "workspacePath">,
  options: z.output<typeof backgroundWorkOptionsSchema>,
  extra: string[],
  context: OpContext,
): Promise<{ output: unknown } | { unknown: string; cut: boolean }> {
  const argv = [
    ...options.command,
    "--marker-dir",
    `${machine.workspacePath}/${BACKGROUND_MARKER_DIR}`,
    ...(options.job ? ["--job", options.job] : []),
    ...extra,
  ];
  let result: ExecResult;
  try {
    const timeoutMs = Math.max(1, Math.floor(Math.min(options.timeoutMs, remainingMs(context))));
    result = await machine.exec({ argv, timeoutMs, maxOutputBytes: 16 * 1024 * 1024 }, context);
  } catch (error) {
    if (context.signal?.aborted) throw error;
    const message = AgentComputerError.is(error) ? `${error.code}: ${error.message}` : String(error);
    return { unknown: `the scanner could not run (${message})`, cut: true };
  }
  // 127: `env python3` (or the scanner) not found; 126: found but not runnable.
  if (result.exitCode === 127 || result.exitCode === 126) {
    return {
      unknown: `python3 or the scanner is missing or not runnable on this computer (exit ${result.exitCode})`,
      cut: false,
    };
  }
  if (result.timedOut) return { unknown: `the scanner did not finish within ${options.timeoutMs} ms`, cut: true };
  const last = Buffer.from(result.stdout).toString("utf8").trim().split("\n").at(-1) ?? "";
  try {
    return { output: JSON.parse(last) };
  } catch {
    return { unknown: `the scanner printed no result (exit ${result.exitCode})`, cut: result.exitCode !== 0 };
  }
}
