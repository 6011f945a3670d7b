import { AgentComputerError } from "@agent-computer/core";

/** The fields of a Kubernetes `Status` object this package reads. */
interface StatusShape {
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; kind?: string };
}

/** What @kubernetes/client-node's ApiException and fetch failures carry. */
interface ApiErrorShape {
  code?: number | string;
  body?: unknown;
  message?: string;
  name?: string;
  type?: string;
}

/** The HTTP status of an API error, when the server answered at all. */
export function apiStatus(error: unknown): number | undefined {
  const code = (error as ApiErrorShape | undefined)?.code;
  return typeof code === "number" && code >= 100 && code < 600 ? code : undefined;
}

/** The server's `Status` object behind an API error (its body), when there is one. */
export function apiStatusObject(error: unknown): StatusShape | undefined {
  let body = (error as ApiErrorShape | undefined)?.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return typeof body === "object" && body !== null ? (body as StatusShape) : undefined;
}

/**
 * Turns an API failure into the project's one error type, with a message a
 * person can act on. The message is built from the server's `Status`
 * (never from the client's error text, which may echo request details), so
 * no credential reaches logs or callers. 403 names the Role to grant, 409
 * says the pod name is taken, 404 of the namespace says to create it.
 */
export function kubernetesApiFailure(error: unknown, what: string, namespace: string): AgentComputerError {
  if (AgentComputerError.is(error)) return error;
  const status = apiStatus(error);
  const statusObject = apiStatusObject(error);
  const detail = (statusObject?.message ?? "").slice(0, 300);
  if (status === undefined) {
    const e = (error ?? {}) as ApiErrorShape;
    if (e.name === "AbortError") return new AgentComputerError("ABORTED", `Could not ${what}: aborted.`);
    const code = typeof e.code === "string" ? e.code : undefined;
    return new AgentComputerError(
      "UNAVAILABLE",
      `Could not ${what}: the Kubernetes API server is unreachable${code ? ` (${code})` : ""}. Check the kubeconfig's server and the network between this process and the cluster.`,
      { cause: error, details: { code } },
    );
  }
  switch (status) {
    case 400:
    case 422:
      return new AgentComputerError(
        "INVALID_ARGUMENT",
        `Could not ${what}: the API server refused the request: ${detail}`,
        {
          cause: error,
          details: { status },
        },
      );
    case 401:
      return new AgentComputerError(
        "UNAVAILABLE",
        `Could not ${what}: the API server did not accept this process's credentials (401 Unauthorized). Check the kubeconfig or the service account token.`,
        { cause: error, retryable: false, details: { status } },
      );
    case 403:
      return new AgentComputerError(
        "UNAVAILABLE",
        `Could not ${what}: the API server forbids it (403 Forbidden${detail ? `: ${detail}` : ""}). Grant this process's service account the Role from the provider's README in namespace "${namespace}" (pods: create, get, list, delete; pods/exec: create, get; pods/log: get; secrets: create, for egress credentials).`,
        { cause: error, retryable: false, details: { status, reason: statusObject?.reason } },
      );
    case 404:
      if (statusObject?.details?.kind === "namespaces") {
        return new AgentComputerError(
          "NOT_FOUND",
          `Could not ${what}: the namespace "${namespace}" does not exist. Create it (kubectl create namespace ${namespace}) or set KUBERNETES_SANDBOX_NAMESPACE to one that does.`,
          { cause: error, details: { status, namespace } },
        );
      }
      return new AgentComputerError("NOT_FOUND", `Could not ${what}: ${detail || "not found"}.`, {
        cause: error,
        details: { status },
      });
    case 409:
      return new AgentComputerError(
        "CONFLICT",
        `Could not ${what}: the API server reports a conflict (409 ${statusObject?.reason ?? "Conflict"}${detail ? `: ${detail}` : ""}). Another pod has this name or the object changed meanwhile; try again.`,
        { cause: error, details: { status, reason: statusObject?.reason } },
      );
    case 429:
      return new AgentComputerError("UNAVAILABLE", `Could not ${what}: the API server is throttling requests (429).`, {
        cause: error,
        details: { status },
      });
    default:
      return new AgentComputerError(
        "UNAVAILABLE",
        `Could not ${what}: the Kubernetes API server failed (${status}${detail ? `: ${detail}` : ""}).`,
        { cause: error, retryable: status >= 500, details: { status } },
      );
  }
}
