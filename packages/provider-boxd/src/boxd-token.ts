import { AgentComputerError } from "@agent-computer/core";
import { isNetworkFailure, serviceFailure } from "@agent-computer/provider-kit";

/** The exchange's answer (docs.boxd.sh, reference/grpc-api, "Exchange for a JWT"). */
interface TokenAnswer {
  token?: unknown;
  /** Unix seconds. */
  expires_at?: unknown;
}

/** A JWT lives about an hour (docs.boxd.sh); one answered without `expires_at` is taken to live this long. */
const ASSUMED_LIFETIME_MS = 3_600_000;
/** A token this close to its end is exchanged again before a call, so no call carries one that expires under it. */
const REFRESH_BEFORE_MS = 5 * 60_000;

/**
 * The bearer for boxd's gRPC calls: the API key exchanged at
 * `POST /api/v1/auth/token` for a short-lived JWT, kept and exchanged
 * again before it ends. One exchange at a time: calls that need a token
 * meanwhile wait for it. Every token is added to `secrets`, so none reaches
 * a message or a log.
 */
export class BoxdTokenSource {
  private current: { token: string; expiresAt: number } | undefined;
  private exchanging: Promise<string> | undefined;

  constructor(
    private readonly options: {
      apiKey: string;
      tokenUrl: string;
      requestTimeoutMs: number;
      secrets: Set<string>;
    },
  ) {}

  /** A token good for at least a few minutes more. */
  async token(signal?: AbortSignal): Promise<string> {
    const current = this.current;
    if (current && current.expiresAt - Date.now() > REFRESH_BEFORE_MS) return current.token;
    this.exchanging ??= this.exchange(signal).finally(() => {
      this.exchanging = undefined;
    });
    return this.exchanging;
  }

  /** Forgets the token: the service refused it (expired early, revoked), so the next call exchanges again. */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async exchange(signal?: AbortSignal): Promise<string> {
    const what = "exchange the API key for a token";
    const timeout = AbortSignal.timeout(this.options.requestTimeoutMs);
    let response: Response;
    try {
      response = await fetch(this.options.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: this.options.apiKey }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw serviceFailure({
        service: "boxd",
        what,
        detail: isNetworkFailure(error) || error instanceof Error ? (error as Error).message : String(error),
        secrets: this.options.secrets,
      });
    }
    const body = await response.text();
    if (!response.ok) {
      throw serviceFailure({
        service: "boxd",
        what,
        status: response.status,
        detail: body,
        secrets: this.options.secrets,
      });
    }
    let answer: TokenAnswer;
    try {
      answer = JSON.parse(body) as TokenAnswer;
    } catch {
      answer = {};
    }
    if (typeof answer.token !== "string" || answer.token === "") {
      throw new AgentComputerError("UNAVAILABLE", "boxd's token exchange answered without a token.", {
        retryable: true,
      });
    }
    const expiresAt =
      typeof answer.expires_at === "number" && answer.expires_at > 0
        ? answer.expires_at * 1000
        : Date.now() + ASSUMED_LIFETIME_MS;
    this.options.secrets.add(answer.token);
    this.current = { token: answer.token, expiresAt };
    return answer.token;
  }
}
