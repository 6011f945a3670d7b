import { type ErrorCode, RETRYABLE_BY_DEFAULT } from "./error-code.js";

export interface AgentComputerErrorOptions {
  /** Overrides the code's default (see `RETRYABLE_BY_DEFAULT`). */
  retryable?: boolean;
  /** The lower-level error, kept for debugging; never shown to a model. */
  cause?: unknown;
  /** Structured, secret-free facts about the failure (paths, limits, ids). */
  details?: Record<string, unknown>;
}

// A brand shared by every copy of this class: the ESM and CJS builds, each
// entry of a bundle and two installed versions all define their own class,
// so `instanceof` alone would miss errors thrown by another copy.
const BRAND = Symbol.for("agent-computer.error");

/**
 * The one error class of agent-computer. `code` is stable, `message` says
 * what a person can do about it, `retryable` says whether the same call may
 * succeed later.
 */
export class AgentComputerError extends Error {
  override readonly name = "AgentComputerError";
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AgentComputerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT[code];
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** True when `error` is an AgentComputerError, optionally with one of `codes`. */
  static is(error: unknown, ...codes: ErrorCode[]): error is AgentComputerError {
    const branded = typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[BRAND] === true;
    return branded && (codes.length === 0 || codes.includes((error as AgentComputerError).code));
  }

  /**
   * `instanceof` that also recognises errors of another copy of this class
   * (see BRAND). A subclass is checked by its prototype chain as usual:
   * the brand says "an AgentComputerError", never "this subclass".
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` was asked about, maybe a subclass.
    if (this !== AgentComputerError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** A plain object safe to log or hand to a model: no stack, no cause. */
  toJSON(): { code: ErrorCode; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}
