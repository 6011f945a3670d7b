/** Why a computer is reserved; each excludes new execution leases and takeovers while it runs. */
export type ReservationPurpose = "update" | "recovery" | "idle-suspension" | "stop" | "mode-change";
