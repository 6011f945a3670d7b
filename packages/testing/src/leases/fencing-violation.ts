/** A broken fencing guarantee that `checkFencingHistory` found, with the events that show it. */
export interface FencingViolation {
  readonly rule:
    | "token-reused"
    | "token-order"
    | "unknown-token"
    | "fenced-out-accepted"
    | "expired-accepted"
    | "overlapping-holders";
  readonly key: string;
  readonly message: string;
}
