import type { ReservationPurpose } from "./reservation-purpose.js";

/** A running or interrupted reservation as anyone may inspect it (`getReservation`). */
export interface ReservationState {
  readonly id: string;
  readonly computerId: string;
  readonly holder: string;
  readonly purpose: ReservationPurpose;
  readonly token: number;
  /** The last heartbeat, by the store's clock. */
  readonly heartbeatAt: number;
  /** `interrupted` once `interruptAfterMs` passed without a heartbeat. */
  readonly status: "running" | "interrupted";
}
