import type { Lease } from "./lease.js";
import type { LeaseEngine } from "./lease-engine.js";

/** What an engine remembers about a lease it handed out, beyond the lease's own fields. */
export interface IssuedLease {
  readonly engine: LeaseEngine;
  readonly storeKey: string;
  /**
   * Monotonic time after which the client treats the lease as lost: the
   * start of the request that granted or renewed it plus its TTL. The
   * request started before the store read its clock, so this deadline is
   * never later than the store's.
   */
  localDeadline: number;
}

// Keyed by object identity: a copied or hand-made lease is not in here, so
// nobody can forge a token or stretch a deadline by editing fields.
const issued = new WeakMap<object, IssuedLease>();

export function registerLease(lease: Lease, meta: IssuedLease): void {
  issued.set(lease, meta);
}

export function issuedLease(lease: unknown): IssuedLease | undefined {
  return typeof lease === "object" && lease !== null ? issued.get(lease) : undefined;
}
