import { AgentComputerError } from "@agent-computer/core";
import {
  isNetworkFailure,
  isTransientStatus,
  redactSecrets,
  retryWithin,
  serviceFailure,
} from "@agent-computer/provider-kit";
import {
  CreateosSandboxApiError,
  CreateosSandboxClient,
  CreateosSandboxConnectionError,
  CreateosSandboxTimeoutError,
  type CreateSandboxRequest,
  Sandbox,
  type SandboxView,
} from "@nodeops-createos/sandbox";
import { egressIsClosed } from "./createos-egress.js";

/** States a sandbox does not come back from (types.ts SandboxStatus). */
export const CREATEOS_GONE_STATES: ReadonlySet<string> = new Set(["destroying", "destroyed", "failed", "error"]);
/** States on the way to `paused` or back to `running`. */
export const CREATEOS_MOVING_STATES: ReadonlySet<string> = new Set(["creating", "pausing", "resuming", "forking"]);

export interface CreateosServiceOptions {
  apiKey: string;
  baseUrl: string;
  requestTimeoutMs: number;
  retryMs: number;
  /** Values never to appear in a message (the key, and what else is secret). */
  secrets: Set<string>;
}

/**
 * The CreateOS API through its official SDK (@nodeops-createos/sandbox):
 * the SDK's own calls where it has them (create, get, list, pause,
 * resume, destroy, files), its transport (`client.http`, "an escape
 * hatch for endpoints the SDK does not model") for the rest. Failures are
 * sorted once (`failure`): a refused key is never taken for a vanished
 * sandbox; 429, 5xx and no answer are retried within `retryMs` for calls
 * that may be sent again (the SDK's own retries are off, so one deadline
 * rules).
 */
export class CreateosService {
  readonly client: CreateosSandboxClient;

  constructor(private readonly options: CreateosServiceOptions) {
    this.client = new CreateosSandboxClient({
      apiKey: options.apiKey,
      baseUrl: options.baseUrl,
      timeoutMs: options.requestTimeoutMs,
      retry: false,
    });
  }

  redact(text: string): string {
    return redactSecrets(text, this.options.secrets);
  }

  /** The contract's error for a failed call (`gone`: a 404 means the sandbox the call was about is gone). */
  failure(error: unknown, what: string, missingMeans: "gone" | "not-found" = "gone"): AgentComputerError {
    return serviceFailure({
      service: "CreateOS",
      what,
      status: statusOf(error),
      detail: error instanceof Error ? error.message : String(error),
      missingMeans,
      secrets: this.options.secrets,
    });
  }

  /** A call that may be sent again, retried after 429/5xx/no answer within `retryMs`. */
  retried<T>(call: () => Promise<T>, what: string, signal?: AbortSignal): Promise<T> {
    return retryWithin(call, {
      until: Date.now() + this.options.retryMs,
      signal,
      isTransient: (error) => {
        const status = statusOf(error);
        return status === undefined ? isNetworkFailure(error) || isSdkNetworkFailure(error) : isTransientStatus(status);
      },
      failure: (error) => this.failure(error, what),
    });
  }

  /** client.js createSandbox: synchronous, answers once the VM runs. Not retried: a create is not idempotent. */
  async create(request: CreateSandboxRequest, signal: AbortSignal): Promise<Sandbox> {
    try {
      return await this.client.createSandbox(request, { signal, timeoutMs: 0 });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw this.failure(error, "create a sandbox", "not-found");
    }
  }

  /** client.js getSandbox: the sandbox's view; 404 is PROVIDER_GONE. */
  get(id: string, signal: AbortSignal): Promise<Sandbox> {
    return this.retried(() => this.client.getSandbox(id, { signal }), `read sandbox ${id}`, signal);
  }

  /** client.js listSandboxes: every page (http.js fetchAllPages). */
  list(signal: AbortSignal): Promise<Sandbox[]> {
    return this.retried(() => this.client.listSandboxes({ signal }), "list sandboxes", signal);
  }

  /**
   * Refuses a sandbox the service left open though it was asked for an
   * allowlist: the create's answer says what it holds ("Resolved egress
   * allowlist", types.d.ts CreateSandboxResponse.egress), but the server
   * may leave it out (`omitempty`: the SDK's COMPATIBILITY.md), so then the
   * sandbox's egress is read (sandbox.js getEgress, GET .../egress), its
   * list taken from `egress` (types.d.ts EgressView) or `rules` (the SDK's
   * docs/how-to/lifecycle.md reads `view.rules`).
   */
  async assertEgressHeld(sandbox: Sandbox, signal: AbortSignal): Promise<void> {
    let held: unknown = sandbox.data.egress;
    if (held === undefined) {
      const view = (await this.retried(
        () => sandbox.getEgress({ signal }),
        `read sandbox ${sandbox.id}'s egress`,
        signal,
      )) as unknown as Record<string, unknown>;
      held = view.egress ?? view.rules;
    }
    const list = Array.isArray(held) ? held.filter((rule): rule is string => typeof rule === "string") : undefined;
    if (!egressIsClosed(list)) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `CreateOS did not take sandbox ${sandbox.id}'s egress allowlist (it holds ${JSON.stringify(list ?? null)}, everything allowed); the sandbox is destroyed.`,
      );
    }
  }

  /** A handle for calls on a known id without reading it first. */
  handle(id: string): Sandbox {
    return new Sandbox(this.client.http, { id } as SandboxView);
  }
}

/** The HTTP status of an SDK error; undefined when no answer came. */
export function statusOf(error: unknown): number | undefined {
  if (error instanceof CreateosSandboxApiError) return error.statusCode;
  return undefined;
}

function isSdkNetworkFailure(error: unknown): boolean {
  return error instanceof CreateosSandboxConnectionError || error instanceof CreateosSandboxTimeoutError;
}
