import { z } from "zod";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { parseInput } from "../validation/parse-input.js";
import type { LeaseClaim } from "./lease-claim.js";
import { type Logger, silentLogger } from "./logger.js";

/**
 * Passed last to every provider method. Aborting `signal` or passing
 * `deadline` stops the work itself (a command's process tree is killed, a
 * transfer is cut), not only the waiting.
 */
export interface OpContext {
  /** Cancels the operation. */
  readonly signal?: AbortSignal;
  /** Absolute deadline in milliseconds since the epoch (`Date.now()` scale). */
  readonly deadline?: number;
  /** The caller's lease, for fenced operations. */
  readonly lease?: LeaseClaim;
  /** Where the operation reports progress; defaults to a silent logger. */
  readonly logger?: Logger;
}

const opContextSchema = z.object({
  signal: z.instanceof(AbortSignal).optional(),
  deadline: z.number().finite().optional(),
  lease: z.object({ key: z.string().min(1), token: z.number().int().nonnegative() }).optional(),
  logger: z
    .custom<Logger>((v) => typeof v === "object" && v !== null && typeof (v as Logger).info === "function", {
      message: "expected a Logger with debug/info/warn/error",
    })
    .optional(),
});

export interface OpContextOptions {
  signal?: AbortSignal;
  /** Relative timeout; becomes `deadline`. */
  timeoutMs?: number;
  lease?: LeaseClaim;
  logger?: Logger;
}

/** Builds an OpContext from friendlier options (`timeoutMs` instead of a deadline). */
export function opContext(options: OpContextOptions = {}): OpContext {
  const parsed = parseInput(
    z.object({ timeoutMs: z.number().finite().positive().optional() }).passthrough(),
    options,
    "OpContextOptions",
  );
  return checkOpContext({
    signal: options.signal,
    deadline: parsed.timeoutMs === undefined ? undefined : Date.now() + parsed.timeoutMs,
    lease: options.lease,
    logger: options.logger,
  });
}

/** Validates a caller's context; providers call this on entry. */
export function checkOpContext(ctx: unknown): OpContext {
  if (ctx === undefined) return {};
  return parseInput(opContextSchema, ctx, "OpContext") as OpContext;
}

/** The context's logger, or the silent one. */
export function loggerOf(ctx: OpContext): Logger {
  return ctx.logger ?? silentLogger;
}

/** Milliseconds left before the deadline (Infinity when there is none). */
export function remainingMs(ctx: OpContext): number {
  return ctx.deadline === undefined ? Number.POSITIVE_INFINITY : ctx.deadline - Date.now();
}

/** Throws `ABORTED` or `TIMEOUT` when the context is already done. */
export function throwIfDone(ctx: OpContext, what = "operation"): void {
  if (ctx.signal?.aborted) throw abortedError(what, ctx.signal.reason);
  if (remainingMs(ctx) <= 0) throw new AgentComputerError("TIMEOUT", `The ${what} passed its deadline.`);
}

/**
 * One AbortSignal that fires on the caller's signal or at the deadline,
 * whichever comes first. Its `reason` is an AgentComputerError (ABORTED or
 * TIMEOUT), so code that forwards it throws a typed error.
 */
export function signalOf(ctx: OpContext, what = "operation"): AbortSignal {
  const controller = new AbortController();
  const onAbort = () => controller.abort(abortedError(what, ctx.signal?.reason));
  if (ctx.signal?.aborted) onAbort();
  else ctx.signal?.addEventListener("abort", onAbort, { once: true });
  const left = remainingMs(ctx);
  if (Number.isFinite(left) && !controller.signal.aborted) {
    if (left <= 0) controller.abort(new AgentComputerError("TIMEOUT", `The ${what} passed its deadline.`));
    else {
      const timer = setTimeout(
        () => controller.abort(new AgentComputerError("TIMEOUT", `The ${what} passed its deadline.`)),
        left,
      );
      timer.unref?.();
      controller.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
    }
  }
  return controller.signal;
}

function abortedError(what: string, reason: unknown): AgentComputerError {
  if (AgentComputerError.is(reason)) return reason;
  return new AgentComputerError("ABORTED", `The ${what} was aborted by the caller.`, { cause: reason });
}
