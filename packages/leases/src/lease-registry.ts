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
// nobody can forge a token or stretch a deadline by editing fields. One map
// per process, found by a Symbol.for key, so that every copy of this package
// (its ESM and CJS builds, a bundle, two installed versions) accepts the
// leases another copy issued, as AgentComputerError.is does for errors.
const REGISTRY = Symbol.for("agent-computer.issued-leases");
const slots = globalThis as { [REGISTRY]?: WeakMap<object, IssuedLease> };
slots[REGISTRY] ??= new WeakMap<object, IssuedLease>();
const issued = slots[REGISTRY];

export function registerLease(lease: Lease, meta: IssuedLease): void {
  issued.set(lease, meta);
}

export function issuedLease(lease: unknown): IssuedLease | undefined {
  return typeof lease === "object" && lease !== null ? issued.get(lease) : undefined;
}
