import type { LeaseClaim } from "@agent-computer/core";
import type { LeaseKind } from "./lease-kind.js";

/**
 * A granted lease, as the `LeaseEngine` that issued it hands it out. Only
 * that engine accepts it back (a copy or another engine's lease is
 * INVALID_ARGUMENT), because the engine also keeps the client-side deadline
 * it measured on its monotonic clock. Frozen; `renew` returns a new one that shares this grant, so the earlier
 * objects of one grant follow every renewal and fail together when it is lost.
 */
export interface Lease extends LeaseClaim {
  readonly kind: LeaseKind;
  /** The key within its kind: the app's key, or one derived from computer and bot. */
  readonly key: string;
  /** Who holds it: one worker or person. Acquiring again as the same holder returns the same token. */
  readonly holder: string;
  /** The fencing token: grows with every new grant of this key, also across releases. */
  readonly token: number;
  /** Validity granted by each acquire or renew, in milliseconds. */
  readonly ttlMs: number;
  /** When this token was first granted, by the store's clock. */
  readonly grantedAt: number;
  /**
   * When it expires by the store's clock (for a reservation: when it turns
   * `interrupted` without a heartbeat). Informational: the client decides
   * by its own monotonic deadline, the store by its own clock.
   */
  readonly expiresAt: number;
  /** Set for every kind but `custom`. */
  readonly computerId?: string;
  /** Set for `execution` and `user-control`. */
  readonly botId?: string;
}
