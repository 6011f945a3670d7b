import { AgentComputerError } from "@agent-computer/core";
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
  return typeof status === "number" ? status : undefined;
}

/** A failure worth retrying within the deadline: 5xx, 429, or the network. */
export function isTransient(error: unknown): boolean {
  const status = sdkStatus(error);
  if (status !== undefined) return status === 429 || status >= 500;
  return isNetworkFailure(error);
}

/** fetch's own failures (refused, reset, DNS), not answers from the service. */
export function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === "AbortError" || error.name === "TimeoutError") return false;
  return (
    error instanceof TypeError || /fetch failed|ECONNREFUSED|ECONNRESET|socket|terminated|network/i.test(error.message)
  );
}

/** Never a message of the SDK verbatim past 200 characters; never a header or a token (it carries none). */
function brief(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").slice(0, 200);
}

/**
 * The contract's error for a control-plane failure. An authentication or a
 * network failure is UNAVAILABLE and never "gone": only the service saying
 * it does not know a sandbox means gone (docs/architecture.md §9).
 */
export function e2bFailure(error: unknown, what: string, service = "E2B"): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const status = sdkStatus(error);
  if (status === 401 || status === 403) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `${service} refused the API key while trying to ${what} (HTTP ${status}); check the API key. No computer is replaced on this error.`,
      { retryable: false, cause: error },
    );
  }
  if (status === 429 || (status !== undefined && status >= 500)) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `${service} was unavailable while trying to ${what} (HTTP ${status}, still after retrying): ${brief(error)}`,
      { retryable: true, cause: error },
    );
  }
  if (status === 400) {
    return new AgentComputerError("INVALID_ARGUMENT", `${service} refused to ${what}: ${brief(error)}`, {
      cause: error,
    });
  }
  if (status === 402 || status === 409) {
    return new AgentComputerError("CONFLICT", `${service} refused to ${what} (HTTP ${status}): ${brief(error)}`, {
      retryable: false,
      cause: error,
    });
  }
  if (isNetworkFailure(error)) {
    return new AgentComputerError("UNAVAILABLE", `${service} could not be reached to ${what}: ${brief(error)}`, {
      retryable: true,
      cause: error,
    });
  }
  return new AgentComputerError("UNAVAILABLE", `${service} failed to ${what}: ${brief(error)}`, {
    retryable: false,
    cause: error,
  });
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });

/**
 * Runs a control-plane call, retrying 5xx, 429 and network failures with
 * backoff until `deadlineMs` has passed (the SDK itself retries only a 429
 * that carries Retry-After), then throws the last failure as the contract's
 * error. Anything else is thrown at once.
 */
export async function withControlPlaneRetry<T>(
  call: () => Promise<T>,
  options: { what: string; deadlineMs: number; signal: AbortSignal; service?: string },
): Promise<T> {
  const until = Date.now() + options.deadlineMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      const wait = Math.min(2000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
      if (!isTransient(error) || Date.now() + wait >= until) throw e2bFailure(error, options.what, options.service);
      await sleep(wait, options.signal);
    }
  }
}
