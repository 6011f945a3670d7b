import { AgentComputerError } from "@agent-computer/core";

/** A failed call to a hosted service, as its client saw it. */
export interface ServiceFailure {
  /** The service, as messages name it ("E2B", "the Box API"). */
  service: string;
  /** What was being done ("create a sandbox"). */
  what: string;
  /** The HTTP status; undefined when no answer came (refused, reset, timed out). */
  status?: number;
  /** The service's own message or code, trimmed; secrets are removed here. */
  detail?: string;
  /** Extra facts for `details` (a service's error code, a request id). */
  details?: Record<string, unknown>;
  /**
   * What a 404 or 410 means for this call: the machine the call was about
   * is gone (`PROVIDER_GONE`), or the thing asked for is not there
   * (`NOT_FOUND`, the default).
   */
  missingMeans?: "gone" | "not-found";
  /** The key, tokens and other values never to appear in a message. */
  secrets?: Iterable<string>;
}

/** 429 and 5xx: "not now", worth retrying within a deadline. */
export function isTransientStatus(status: number | undefined): boolean {
  return status !== undefined && (status === 429 || status >= 500);
}

/** fetch's and sockets' own failures (refused, reset, DNS, cut), not answers from a service. */
export function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === "AbortError" || error.name === "TimeoutError") return false;
  return (
    error instanceof TypeError ||
    /fetch failed|ECONNREFUSED|ECONNRESET|EPIPE|socket|terminated|network/i.test(error.message)
  );
}

/**
 * Removes what must never reach a log, an event or an error: the given
 * secrets, and anything token-like a server might echo that this process
 * never saw.
 */
export function redactSecrets(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out.replace(/(token|key|authorization|bearer)([=: "]+)[A-Za-z0-9._~+/-]{8,}/gi, "$1$2[redacted]");
}

/**
 * The contract's error for a service's failure, sorted once for every
 * hosted provider (docs/architecture.md §9): a refused key is UNAVAILABLE
 * and never "gone" (no computer is replaced on it); 429, 5xx and no answer
 * are UNAVAILABLE and retryable; 404/410 are gone or not found as the call
 * says; 409 and 402 are CONFLICT; 400 and 422 INVALID_ARGUMENT. The
 * service's own error is never attached: it may hold the request and its
 * credentials.
 */
export function serviceFailure(failure: ServiceFailure): AgentComputerError {
  const { service, what, status } = failure;
  const detail = redactSecrets(failure.detail ?? "", failure.secrets)
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 300);
  const details = { ...failure.details, ...(status === undefined ? {} : { status }) };
  const said = (verb: string) => `${service} ${verb} ${what}${detail ? `: ${detail}` : ""}`;
  if (status === undefined) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `${service} could not be reached to ${what}${detail ? `: ${detail}` : ""}.`,
      {
        retryable: true,
        details,
      },
    );
  }
  if (status === 401 || status === 403) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `${service} refused the API key while trying to ${what} (HTTP ${status}); check the API key. No computer is replaced on this error.`,
      { retryable: false, details },
    );
  }
  if (status === 404 || status === 410) {
    const code = failure.missingMeans === "gone" ? "PROVIDER_GONE" : "NOT_FOUND";
    return new AgentComputerError(code, `${said(`found nothing (HTTP ${status}) to`)}.`, { details });
  }
  if (status === 409 || status === 402) {
    return new AgentComputerError("CONFLICT", `${said(`refused (HTTP ${status}) to`)}.`, { retryable: false, details });
  }
  if (status === 400 || status === 422) {
    return new AgentComputerError("INVALID_ARGUMENT", `${said(`refused (HTTP ${status}) to`)}.`, { details });
  }
  if (isTransientStatus(status)) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `${said(`was unavailable (HTTP ${status}, still after retrying) to`)}.`,
      {
        retryable: true,
        details,
      },
    );
  }
  return new AgentComputerError("UNAVAILABLE", `${said(`failed (HTTP ${status}) to`)}.`, { retryable: false, details });
}

/** The HTTP status a `serviceFailure` (or any AgentComputerError with `details.status`) carries; 0 means no answer. */
export function statusOfFailure(error: unknown): number | undefined {
  const status = AgentComputerError.is(error) ? error.details?.status : undefined;
  return typeof status === "number" ? status : undefined;
}
