import { createHash, timingSafeEqual } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";

/** Shortest token the HTTP transport accepts: a guessable one is no lock. */
export const MIN_TOKEN_LENGTH = 32;

/** Refuses a missing or short token at start, before anything listens. */
export function checkedToken(token: string | undefined, variable = "MCP_AUTH_TOKEN"): string {
  if (!token || token.length < MIN_TOKEN_LENGTH) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The MCP HTTP transport needs a bearer token of at least ${MIN_TOKEN_LENGTH} characters (${variable}); ${
        token ? "the one given is too short" : "none is set"
      }. Make one with: openssl rand -hex 32`,
    );
  }
  return token;
}

/** What an `Authorization` header says: no bearer token at all, another token, or this one. */
export type BearerVerdict = "missing" | "wrong" | "matches";

/**
 * Whether an `Authorization` header carries the token. Compared as SHA-256
 * digests with `timingSafeEqual`: equal lengths whatever was sent, and no
 * early exit that tells a caller how much of a guess was right. A header
 * without a `Bearer` token is "missing", so a client told so knows to set
 * one, and one told "wrong" knows its token is stale or mistyped.
 */
export function bearerVerdict(header: string | undefined, token: string): BearerVerdict {
  const sent = /^Bearer ([^\s]+)$/i.exec(header ?? "")?.[1] ?? "";
  if (sent.length === 0) return "missing";
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(sent), digest(token)) ? "matches" : "wrong";
}

/** Whether an `Authorization` header carries the token (`bearerVerdict` is "matches"). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  return bearerVerdict(header, token) === "matches";
}
