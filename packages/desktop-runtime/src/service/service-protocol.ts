// The resident service's wire protocol (docs/architecture.md §4), shared by
// the host's client (desktop-service-client.ts) and the computer's side
// (computer/desktop/desktop-service.ts). One websocket per machine, on the
// screen gateway's port at SERVICE_PATH, JSON text messages:
//
//   service → host   {t:"challenge", nonce}
//   host → service   {t:"hello", keyId, nonce, proof}       proof = HMAC(key, client, serviceNonce, hostNonce)
//   service → host   {t:"welcome", proof}                   proof = HMAC(key, service, hostNonce, serviceNonce)
//   host → service   {t:"call", id, argv, stdin?, timeoutMs} {t:"cancel", id}
//   service → host   {t:"line", id, line}  …  {t:"end", id}
//
// Both sides prove they hold the key the host handed over on exec's stdin,
// over nonces fresh on both ends: a recorded hello fails on any other
// connection, and a process that took the port without the key cannot
// answer the challenge, so the host sends it nothing.
import { createHash, createHmac, randomBytes } from "node:crypto";

/** The websocket path of the service on the screen gateway's port. */
export const SERVICE_PATH = "/service";
/** A key is 32 random bytes, base64url (43 characters). */
export const SERVICE_KEY = /^[A-Za-z0-9_-]{43}$/;

export type ServiceRole = "host" | "service";

export type ServiceMessage =
  | { t: "challenge"; nonce: string }
  | { t: "hello"; keyId: string; nonce: string; proof: string }
  | { t: "welcome"; proof: string }
  | { t: "call"; id: number; argv: string[]; stdin?: string; timeoutMs: number }
  | { t: "cancel"; id: number }
  | { t: "line"; id: number; line: Record<string, unknown> }
  | { t: "end"; id: number };

export const newServiceKey = (): string => randomBytes(32).toString("base64url");
// Nonces and the constant-time proof comparison are core's (gateway-proof.ts):
// `newGatewayNonce`, `isGatewayNonce`, `gatewayProofMatches`.

/** Names a key without revealing it, so the service finds the one a hello is made with. */
export function serviceKeyId(key: string): string {
  return createHash("sha256").update(`agent-computer service key\n${key}`).digest("base64url").slice(0, 16);
}

/** What `role` sends to prove it holds `key`: bound to both nonces, in the order that role sees them. */
export function serviceProof(key: string, role: ServiceRole, theirNonce: string, ourNonce: string): string {
  return createHmac("sha256", key)
    .update(`agent-computer service ${role}\n${theirNonce}\n${ourNonce}`)
    .digest("base64url");
}

export function parseServiceMessage(data: unknown): ServiceMessage | undefined {
  try {
    const message = JSON.parse(String(data)) as ServiceMessage;
    return message && typeof message === "object" && typeof message.t === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}
