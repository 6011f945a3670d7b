import type { Lease } from "./lease.js";
import type { ReservationPurpose } from "./reservation-purpose.js";

/**
 * A computer-wide reservation: a lease of kind `reservation` that does not
 * lapse. Its holder heartbeats with `renew`; after `interruptAfterMs` (ten
 * minutes) without one it becomes `interrupted` and stays reserved until its
 * holder releases it or someone calls `releaseInterrupted({ id,
 * workersStopped: true })`. A stale heartbeat alone never frees it.
 */
export interface Reservation extends Lease {
  readonly kind: "reservation";
  readonly computerId: string;
  /** The operation's id, for `releaseInterrupted`; unique per computer and token. */
  readonly id: string;
  readonly purpose: ReservationPurpose;
}
