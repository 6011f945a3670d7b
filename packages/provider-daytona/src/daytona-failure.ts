import { AgentComputerError } from "@agent-computer/core";
import { serviceFailure } from "@agent-computer/provider-kit";

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

/**
 * Turns an SDK failure into the project's one error type, sorted by the
 * kit's `serviceFailure` (docs/architecture.md §9), with two Daytona
 * readings: the SDK's DaytonaAuthenticationError is a refused key whatever
 * its status, and a 409 that outlasted the retries is still "not now"
 * (the API answers 409 while a sandbox changes state, Daytona #4142), so
 * UNAVAILABLE and retryable rather than CONFLICT. The SDK's error is never
 * attached as the cause: it holds the request (its Authorization header).
 */
export function daytonaFailure(error: unknown, what: string, secrets: Iterable<string>): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  if ((error as SdkErrorShape | undefined)?.name === "AbortError") {
    return new AgentComputerError("ABORTED", `Could not ${what}: aborted.`);
  }
  const status = isAuthFailure(error) ? (statusOf(error) ?? 401) : statusOf(error);
  const failure = { service: "The Daytona API", what, status, secrets, detail: (error as SdkErrorShape)?.message };
  const sorted = serviceFailure(failure);
  if (status !== 409) return sorted;
  return new AgentComputerError("UNAVAILABLE", sorted.message, { retryable: true, details: sorted.details });
}
