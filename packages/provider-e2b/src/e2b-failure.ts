import { AgentComputerError } from "@agent-computer/core";
import { isNetworkFailure, retryWithin, serviceFailure } from "@agent-computer/provider-kit";

/**
 * The HTTP status of a control-plane failure the SDK threw, when it says
 * one. By the error's name, not its class: the e2b SDK and Novita's fork
 * (docs/architecture.md §9) throw errors of the same names from their own classes.
 */
export function sdkStatus(error: unknown): number | undefined {
  if (!(error instanceof Error)) return undefined;
  switch (error.name) {
    case "AuthenticationError":
      return 401;
    case "RateLimitError":
      return 429;
    case "ServiceBusyError":
      return 503;
    case "NotFoundError":
    case "SandboxNotFoundError":
      return 404;
  }
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === "number") return status;
  // Novita's fork sets no statusCode: its handleApiError (novita-sandbox 2.1.1)
  // throws `${status}: ${message}`, so its 5xx were never retried.
  const leading = /^([1-5]\d\d): /.exec(error.message)?.[1];
  return leading === undefined ? undefined : Number(leading);
}

/** A failure worth retrying within the deadline: 5xx, 429, or the network. */
function isTransient(error: unknown): boolean {
  const status = sdkStatus(error);
  if (status !== undefined) return status === 429 || status >= 500;
  return isNetworkFailure(error);
}

/** Never a message of the SDK verbatim past 200 characters; never a header or a token (it carries none). */
function brief(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").slice(0, 200);
}

/**
 * The contract's error for a control-plane failure, sorted by the kit
 * (`serviceFailure`): a refused key or the network is UNAVAILABLE and
 * never "gone"; only the service saying it does not know a sandbox means
 * gone, which callers read from the kit's `statusOfFailure` (docs/architecture.md §9).
 */
export function e2bFailure(error: unknown, what: string, service = "E2B"): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const status = sdkStatus(error);
  if (status === undefined && !isNetworkFailure(error)) {
    return new AgentComputerError("UNAVAILABLE", `${service} failed to ${what}: ${brief(error)}`, { retryable: false });
  }
  return serviceFailure({ service, what, status, detail: brief(error) });
}

/**
 * Runs a control-plane call, retrying 5xx, 429 and network failures with
 * backoff until `deadlineMs` has passed (the SDK itself retries only a 429
 * that carries Retry-After), then throws the last failure as the contract's
 * error. Anything else is thrown at once.
 */
export function withControlPlaneRetry<T>(
  call: () => Promise<T>,
  options: { what: string; deadlineMs: number; signal: AbortSignal; service?: string },
): Promise<T> {
  return retryWithin(call, {
    until: Date.now() + options.deadlineMs,
    signal: options.signal,
    isTransient,
    failure: (error) => e2bFailure(error, options.what, options.service),
  });
}
