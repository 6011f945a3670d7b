import type { StretchEnd } from "./computer-stretches.js";

/**
 * One stretch a computer ran at its provider, as the deployment's run
 * records keep it (docs/architecture.md §9): from ready to stop, attributed
 * to the computer's owner and space. What an app bills and audits from.
 */
export interface RunRecord {
  /** The stretch's id (the same as the computer record's `runs[].runId`). */
  readonly recordId: string;
  readonly computerId: string;
  /** The provider kind the computer ran at. */
  readonly providerKind: string;
  /** The app's user the running time counts for; null once that user or the computer was deleted. */
  readonly userId: string | null;
  /** The space (workspace) the computer serves; null once the space or the computer was deleted. */
  readonly spaceId: string | null;
  /** When the computer became ready (boot time is not counted), by the runtime's clock. */
  readonly startedAt: number;
  /** When it stopped; for `gone` and `reconciled`, when the end was noticed. Absent while open. */
  readonly endedAt?: number;
  readonly endReason?: StretchEnd;
}
