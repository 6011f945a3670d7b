import { AgentComputerError } from "@agent-computer/core";
import {
  isNetworkFailure,
  isTransientStatus,
  redactSecrets,
  retryWithin,
  serviceFailure,
} from "@agent-computer/provider-kit";
import type { z } from "zod";

/** Railway's public GraphQL endpoint (the `railway` SDK's DEFAULT_RAILWAY_GRAPHQL_ENDPOINT). */
export const RAILWAY_GRAPHQL_URL = "https://backboard.railway.com/graphql/v2";

export interface RailwayClientOptions {
  token: string;
  /**
   * "account": an account or workspace token, sent as `Authorization: Bearer`;
   * "project": a project token, sent as the `project-access-token` header
   * (the SDK's authHeader, src/core/graphql-client.ts).
   */
  tokenKind: "account" | "project";
  endpoint: string;
  requestTimeoutMs: number;
  /** How long a call that may be sent again is retried on 429, 5xx or no answer. */
  retryMs: number;
  /** Values never to appear in a message (the token, shell tokens). */
  secrets: Set<string>;
}

/** One GraphQL error as the API answers it ({ message, path?, extensions? }). */
interface GraphQLErrorItem {
  message?: unknown;
  extensions?: { code?: unknown };
}

/** A failure with what sorting needs: the HTTP status, or the status a GraphQL error stands for. */
class RailwayCallError extends Error {
  constructor(
    readonly status: number | undefined,
    readonly detail: string,
    readonly code?: string,
  ) {
    super(detail);
  }
}

/**
 * The provider's client of Railway's GraphQL API: one POST per operation
 * with the operation's document and variables, the answer's `data` checked
 * by the operation's schema. Railway answers most failures as HTTP 200
 * with `errors`; the status a message stands for is not published, so it is
 * read from the message (see statusOfErrors and the README).
 */
export class RailwayClient {
  constructor(private readonly options: RailwayClientOptions) {}

  redact(text: string): string {
    return redactSecrets(text, this.options.secrets);
  }

  /**
   * Sends `document`; `idempotent` calls (queries, deletes, stops) are sent
   * again on a transient failure within `retryMs`. A create is sent once:
   * its lost answer may have made the resource (found again by its name).
   */
  async request<T extends z.ZodType>(
    what: string,
    document: string,
    variables: Record<string, unknown>,
    answer: T,
    signal: AbortSignal,
    { idempotent = false, missingMeans = "gone" as "gone" | "not-found" } = {},
  ): Promise<z.output<T>> {
    const failure = (error: unknown) => this.failure(error, what, missingMeans);
    const call = async () => {
      const data = await this.send(document, variables, signal);
      const parsed = answer.safeParse(data);
      if (!parsed.success) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `Railway answered ${what} in a shape this client does not know: ${parsed.error.issues[0]?.path.join(".")} ${parsed.error.issues[0]?.message}.`,
          { retryable: false },
        );
      }
      return parsed.data;
    };
    if (!idempotent) {
      try {
        return await call();
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw failure(error);
      }
    }
    return retryWithin(call, {
      until: Date.now() + this.options.retryMs,
      signal,
      isTransient: (error) =>
        error instanceof RailwayCallError
          ? error.status === undefined || isTransientStatus(error.status)
          : isNetworkFailure(error),
      failure,
    });
  }

  private async send(document: string, variables: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const auth: Record<string, string> =
      this.options.tokenKind === "project"
        ? { "project-access-token": this.options.token }
        : { authorization: `Bearer ${this.options.token}` };
    let response: Response;
    try {
      response = await fetch(this.options.endpoint, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json", ...auth },
        body: JSON.stringify({ query: document, variables }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.requestTimeoutMs)]),
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new RailwayCallError(undefined, error instanceof Error ? error.message : String(error));
    }
    const text = await response.text().catch(() => "");
    let body: { data?: unknown; errors?: GraphQLErrorItem[] } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const errors = Array.isArray(body?.errors) ? body.errors : [];
    if (!response.ok || errors.length > 0) {
      const detail = errors.map((e) => String(e.message ?? "")).join("; ") || text.slice(0, 200);
      const code = typeof errors[0]?.extensions?.code === "string" ? errors[0].extensions.code : undefined;
      throw new RailwayCallError(response.ok ? statusOfErrors(detail, code) : response.status, detail, code);
    }
    if (body?.data === undefined || body.data === null) throw new RailwayCallError(502, "the answer had no data");
    return body.data;
  }

  private failure(error: unknown, what: string, missingMeans: "gone" | "not-found"): unknown {
    if (AgentComputerError.is(error)) return error;
    if (!(error instanceof RailwayCallError)) return error;
    return serviceFailure({
      service: "Railway",
      what,
      status: error.status,
      detail: error.detail,
      missingMeans,
      secrets: this.options.secrets,
      ...(error.code ? { details: { code: error.code } } : {}),
    });
  }
}

/**
 * The HTTP status a GraphQL error in a 200 answer stands for. Railway does
 * not publish error codes; the CLI sorts by message (railwayapp/cli
 * src/client.rs, parse_graphql_response): "project token not found" is a
 * bad token, "not authorized" a refused one, and a 429 carries
 * Retry-After. A missing resource's message says "not found" (its own
 * wording is not published), and any other error refuses the request (400).
 */
export function statusOfErrors(message: string, code: string | undefined): number {
  if (/project token not found|not authori[sz]ed|unauthori[sz]ed|not authenticated/i.test(message)) return 401;
  if (code === "UNAUTHENTICATED") return 401;
  if (code === "FORBIDDEN") return 403;
  if (code === "NOT_FOUND" || /not found|does not exist/i.test(message)) return 404;
  if (/rate ?limit/i.test(message)) return 429;
  if (code === "INTERNAL_SERVER_ERROR" || /problem processing request/i.test(message)) return 500;
  return 400;
}
