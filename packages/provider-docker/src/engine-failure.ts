import { AgentComputerError } from "@agent-computer/core";

/** What dockerode and docker-modem put on the errors they throw. */
interface EngineErrorShape {
  statusCode?: number;
  code?: string;
  name?: string;
  message?: string;
  reason?: string;
  json?: { message?: string } | null;
}

/** Socket-level failures: the engine cannot be reached or the connection was cut. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOENT",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/** The HTTP status of an engine error, when the engine answered at all. */
export function engineStatus(error: unknown): number | undefined {
  return (error as EngineErrorShape | undefined)?.statusCode;
}

/** True when the engine never answered or the connection broke. */
export function isConnectionFailure(error: unknown): boolean {
  const e = error as EngineErrorShape | undefined;
  if (!e || e.statusCode !== undefined) return false;
  return (
    (e.code !== undefined && CONNECTION_CODES.has(e.code)) ||
    /socket hang up|premature close|connect E|aborted/i.test(e.message ?? "")
  );
}

/**
 * Turns an engine failure into the project's one error type. Unreachable
 * engine or cut connection: UNAVAILABLE (retryable). 404/409 are left to
 * callers, which know whether they mean "gone" or "stopped"; here they
 * become NOT_FOUND and CONFLICT.
 */
export function engineFailure(error: unknown, what: string): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const e = (error ?? {}) as EngineErrorShape;
  const detail = (e.json?.message ?? e.reason ?? e.message ?? String(error)).trim();
  if (e.name === "AbortError")
    return new AgentComputerError("ABORTED", `Could not ${what}: aborted.`, { cause: error });
  if (isConnectionFailure(error) || (e.statusCode === undefined && e.code !== undefined)) {
    return new AgentComputerError(
      "UNAVAILABLE",
      `Could not ${what}: the Docker engine is unreachable (${e.code ?? detail}). Check that dockerd runs and that DOCKER_HOST or the socket path points at it.`,
      { cause: error, details: { code: e.code } },
    );
  }
  switch (e.statusCode) {
    case 400:
      return new AgentComputerError(
        "INVALID_ARGUMENT",
        `Could not ${what}: the engine refused the request (${detail}).`,
        {
          cause: error,
        },
      );
    case 404:
      return new AgentComputerError("NOT_FOUND", `Could not ${what}: ${detail}.`, { cause: error });
    case 409:
      return new AgentComputerError("CONFLICT", `Could not ${what}: ${detail}.`, { cause: error });
    default:
      return new AgentComputerError("UNAVAILABLE", `Could not ${what}: the Docker engine failed (${detail}).`, {
        cause: error,
        details: { status: e.statusCode },
      });
  }
}
