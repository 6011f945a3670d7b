import type { OpContext } from "../contract/op-context.js";
import type { ProviderRef } from "../contract/provider-ref.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";

/** A checked `reconnect` call. */
export interface ReconnectRequest {
  readonly ref: ProviderRef;
  readonly context: OpContext;
  /** Fires on the caller's abort or the deadline. */
  readonly signal: AbortSignal;
}

/**
 * Matches the id of a `kind` ref (what follows `kind:`) against the shape
 * this provider's ids have; `shape` says it for people ("<64 hex digit
 * container id>"). Another shape is INVALID_ARGUMENT.
 */
export function matchRefId(kind: string, id: string, pattern: RegExp, shape: string): RegExpExecArray {
  const match = pattern.exec(id);
  if (!match) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid ${kind} ref: expected ${kind}:${shape}, as provision returns.`,
    );
  }
  return match;
}
