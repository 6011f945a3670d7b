import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

// How a client connects to a screen or terminal capability without handing
// its token to whoever listens on the gateway's port (docs/architecture.md §7):
//
//   1. GET <endpoint url as http(s)>   x-agent-computer-challenge: 1
//      ← 401  WWW-Authenticate: AgentComputer challenge="<gateway nonce>"
//   2. websocket upgrade   Authorization: AgentComputer nonce="<client nonce>",
//        challenge="<gateway nonce>", proof="<HMAC(sha256(token), client, …)>"
//      ← 101  x-agent-computer-proof: <HMAC(sha256(token), gateway, …)>
//
// The gateway keeps only the token's SHA-256, which is what both proofs are
// keyed with; the client never sends the token or its hash, and sends
// nothing over the socket before the gateway's proof checks. A process that
// took the port learns nothing it could replay (the challenge is single-use
// and the proof is bound to both nonces). `Authorization: Bearer <token>`
// stays accepted for clients that do not check the gateway.

export const GATEWAY_CHALLENGE_HEADER = "x-agent-computer-challenge";
export const GATEWAY_PROOF_HEADER = "x-agent-computer-proof";
const NONCE = /^[A-Za-z0-9_-]{22}$/;

export const newGatewayNonce = (): string => randomBytes(16).toString("base64url");
export const isGatewayNonce = (value: unknown): value is string => typeof value === "string" && NONCE.test(value);

/** What the gateway keeps of a capability's token, and the key of both proofs. */
export function capabilityTokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/** The proof `role` sends: an HMAC under the token's hash over both nonces, the other side's first. */
export function gatewayProof(
  tokenHash: Buffer,
  role: "client" | "gateway",
  theirNonce: string,
  ourNonce: string,
): string {
  return createHmac("sha256", tokenHash)
    .update(`agent-computer gateway ${role}\n${theirNonce}\n${ourNonce}`)
    .digest("base64url");
}

export function gatewayProofMatches(expected: string, given: unknown): boolean {
  if (typeof given !== "string" || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected), Buffer.from(given));
}

/** `WWW-Authenticate` of a challenge. */
export const gatewayChallengeHeader = (challenge: string): string => `AgentComputer challenge="${challenge}"`;

/** The gateway's nonce in a `WWW-Authenticate` answer, or undefined. */
export function parseGatewayChallenge(header: string | undefined): string | undefined {
  const challenge = /^AgentComputer challenge="([A-Za-z0-9_-]{22})"$/.exec(header ?? "")?.[1];
  return challenge;
}

export interface GatewayAuthorization {
  readonly nonce: string;
  readonly challenge: string;
  readonly proof: string;
}

export const gatewayAuthorizationHeader = (a: GatewayAuthorization): string =>
  `AgentComputer nonce="${a.nonce}", challenge="${a.challenge}", proof="${a.proof}"`;

export function parseGatewayAuthorization(header: string | undefined): GatewayAuthorization | undefined {
  const match =
    /^AgentComputer nonce="([A-Za-z0-9_-]{22})", challenge="([A-Za-z0-9_-]{22})", proof="([A-Za-z0-9_-]{43})"$/.exec(
      header ?? "",
    );
  return match ? { nonce: match[1] as string, challenge: match[2] as string, proof: match[3] as string } : undefined;
}
