import type { ErrorCode } from "@agent-computer/core";

/**
 * An error the CLI reports as JSON with a docs/architecture.md §11 code, so the host side
 * rethrows the same code without parsing messages.
 */
export class CliError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** For a failed action: whether it may have taken effect anyway. */
    readonly uncertain = false,
  ) {
    super(message);
  }
}
