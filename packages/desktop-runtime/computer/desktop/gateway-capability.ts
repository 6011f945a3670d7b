// A screen gateway capability (docs/architecture.md §4, §7): what the gateway
// keeps for each grant, and the bounds every grant is checked against.
// screen-gateway.ts serves them; screen-verbs.ts checks ids and lifetimes
// before it asks.
import type { Server } from "node:net";
import type { ScreenMode } from "./gateway-files.js";
import type { Bridge } from "./websocket-bridge.js";

/** Capability ids: 16 random bytes, base64url. Not secret; they name the websocket path. */
export const CAPABILITY_ID = /^[A-Za-z0-9_-]{22}$/;
export const MIN_TTL_MS = 1000;
export const MAX_TTL_MS = 24 * 60 * 60_000;

export type EndReason =
  | "revoked"
  | "expired"
  | "desktop-stopped"
  | "gateway-stopping"
  /** A terminal's control capability ended. */
  | "control-ended"
  /** A terminal whose PTY server did not start. */
  | "grant-failed";

/**
 * One capability: a route kind (`screens` or `terminals`), the target it
 * reaches (its own Unix socket, bridged to one display's x11vnc in one
 * mode, or to the PTY server of its control capability), the slot claim it
 * is bound to, and its token's hash.
 */
export interface Capability {
  readonly kind: "screens" | "terminals";
  readonly id: string;
  /** Terminals carry input: they are always "control". */
  readonly mode: ScreenMode;
  readonly bot: string;
  readonly slot: number;
  readonly incarnation: string;
  readonly tokenHash: Buffer;
  readonly expiresAt: number;
  readonly socketPath: string;
  server?: Server;
  ended?: EndReason;
  endedAt?: number;
  readonly connections: Map<string, Bridge>;
  /** Terminals: the control capability they live under; `owned` when it was granted for the terminal alone. */
  readonly control?: { readonly id: string; readonly owned: boolean };
  /** Terminals: the workspace home their shells start in. */
  readonly home?: string;
}

/** What every grant names: a bot's slot claim and a lifetime within bounds. */
export function isValidClaim(request: { bot: unknown; slot: unknown; incarnation: unknown; ttlMs: unknown }): boolean {
  const { bot, slot, incarnation, ttlMs } = request;
  return (
    typeof bot === "string" &&
    Number.isInteger(slot) &&
    (slot as number) >= 0 &&
    typeof incarnation === "string" &&
    Number.isInteger(ttlMs) &&
    (ttlMs as number) >= MIN_TTL_MS &&
    (ttlMs as number) <= MAX_TTL_MS
  );
}
