/**
 * Every error agent-computer throws carries one of these stable codes.
 * Codes are part of the public API: match on them, never on messages.
 */
export const ERROR_CODES = [
  "INVALID_ARGUMENT",
  "NOT_FOUND",
  "CONFLICT",
  "UNAVAILABLE",
  "TIMEOUT",
  "ABORTED",
  "UNSUPPORTED",
  "PROVIDER_GONE",
  "MULTI_SCREEN_UNAVAILABLE",
  "BOT_BUSY",
  "LEASE_HELD",
  "LEASE_LOST",
  "FENCED_OUT",
  "STALE_REF",
  "CHECKPOINT_CORRUPT",
  "RESTORE_REJECTED",
  "LIMIT_EXCEEDED",
  "PERMISSION_DENIED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Whether trying the same call again later can succeed without anything else
 * changing. A dependency being unreachable or a deadline passing is worth a
 * retry; bad input or a lost fence never is.
 */
export const RETRYABLE_BY_DEFAULT: Readonly<Record<ErrorCode, boolean>> = {
  INVALID_ARGUMENT: false,
  NOT_FOUND: false,
  CONFLICT: true,
  UNAVAILABLE: true,
  TIMEOUT: true,
  ABORTED: false,
  UNSUPPORTED: false,
  PROVIDER_GONE: false,
  MULTI_SCREEN_UNAVAILABLE: true,
  BOT_BUSY: true,
  LEASE_HELD: true,
  LEASE_LOST: false,
  FENCED_OUT: false,
  STALE_REF: false,
  CHECKPOINT_CORRUPT: false,
  RESTORE_REJECTED: false,
  LIMIT_EXCEEDED: false,
  PERMISSION_DENIED: false,
};
