import type { FencingEvent } from "./fencing-event.js";
import type { FencingViolation } from "./fencing-violation.js";

/** What `runLeaseContention` saw: the history, its check, and counts. */
export interface LeaseContentionResult {
  readonly events: readonly FencingEvent[];
  readonly violations: readonly FencingViolation[];
  readonly stats: {
    /** Every engine or store call the workers made. */
    readonly operations: number;
    readonly grants: number;
    readonly accepted: number;
    /** Actions the fence refused (FENCED_OUT, LEASE_LOST or CONFLICT). */
    readonly refused: number;
    readonly pauses: number;
  };
}
