import { AgentComputerError } from "@agent-computer/core";
import { redactSecrets } from "@agent-computer/provider-kit";

/** What the SDK's errors (DaytonaError and its subclasses) carry that this package reads. */
interface SdkErrorShape {
  statusCode?: number;
  code?: string;
  name?: string;
  message?: string;
}

/** The HTTP status of an SDK failure, when the server answered at all. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as SdkErrorShape | undefined)?.statusCode;
  if (typeof status === "number" && status >= 100 && status < 600) return status;
  // A refused websocket upgrade (the command's log stream) reaches us as the ws library's error.
  const refused = /Unexpected server response: (\d{3})/.exec(String((error as SdkErrorShape | undefined)?.message));
  return refused ? Number(refused[1]) : undefined;
}

/** The API did not take the credentials: never a reason to think a sandbox is gone. */
export function isAuthFailure(error: unknown): boolean {
  const status = statusOf(error);
  return (
    status === 401 || status === 403 || (error as SdkErrorShape | undefined)?.name === "DaytonaAuthenticationError"
  );
}

/**
 * Answers that mean "not now", not "no": 502/503/504 and 400/409 while a
 * sandbox changes state (Daytona #4142), 429, and a connection that failed
 * without an answer. A toolbox 404 is transient too while the sandbox is
 * archived (#4632); callers learn that from the sandbox's state.
 */
export function isTransient(error: unknown): boolean {
  const status = statusOf(error);
  if (status === undefined) {
    const name = (error as SdkErrorShape | undefined)?.name ?? "";
    return (
      /Connection|Timeout/.test(name) ||
      /ECONNRESET|ECONNREFUSED|EPIPE|socket hang up/i.test(String((error as SdkErrorShape)?.message))
    );
  }
  return status === 400 || status === 409 || status === 429 || status >= 500;
}

/** Removes the API key, preview tokens and anything token-like (the kit's `redactSecrets`). */
export const redact = redactSecrets;

/**
 * Turns an SDK failure into the project's one error type. The message is
 * built from the status and the server's text with secrets removed; the
 * SDK's error is never attached as the cause, because it holds the request
 * (its Authorization header) that made it.
 */
export function daytonaFailure(error: unknown, what: string, secrets: Iterable<string>): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const status = statusOf(error);
  const detail = redact(String((error as SdkErrorShape | undefined)?.message ?? ""), secrets).slice(0, 300);
  if ((error as SdkErrorShape | undefined)?.name === "AbortError") {
    return new AgentComputerError("ABORTED", `Could not ${what}: aborted.`);
  }
  if (isAuthFailure(error)) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `Could not ${what}: the Daytona API did not accept the API key (${status ?? "unauthenticated"}). Check DAYTONA_API_KEY and its organization; no computer was replaced.`,
      { retryable: false, details: { status } },
    );
  }
  if (status === undefined) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `Could not ${what}: the Daytona API is unreachable (${detail || "no answer"}). Check apiUrl and the network.`,
    );
  }
  if (status === 404) {
    return new AgentComputerError("NOT_FOUND", `Could not ${what}: not found (${detail}).`, { details: { status } });
  }
  if (status === 400 || status === 422) {
    return new AgentComputerError("INVALID_ARGUMENT", `Could not ${what}: the Daytona API refused it: ${detail}`, {
      details: { status },
    });
  }
  return new AgentComputerError("UNAVAILABLE", `Could not ${what}: the Daytona API failed (${status}: ${detail}).`, {
    retryable: status >= 500 || status === 429 || status === 409,
    details: { status },
  });
}
