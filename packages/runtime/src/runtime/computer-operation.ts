import type { ErrorCode } from "@agent-computer/core";
import type { ModeChange } from "./bot-mode.js";
import type { OperationKind } from "./operation-kind.js";
import type { OperationStage } from "./operation-stage.js";
import type { OperationStatus } from "./operation-status.js";

/**
 * The durable record of one update, recovery or mode change, kept in the state store
 * apart from the computer record (whose version is the provisioning fence),
 * so progress writes never race a ref switch or a revision commit.
 * Reopening an app reads these to show active operations and failures.
 */
export interface ComputerOperation {
  readonly id: string;
  readonly computerId: string;
  readonly kind: OperationKind;
  /** As stored, except that a `running` one past its heartbeat timeout reads `interrupted`. */
  readonly status: OperationStatus;
  /** Who asked for it; only the owner may `releaseInterrupted` it. */
  readonly owner: string;
  /** The worker that claimed it: a claimed operation is never run again by another. */
  readonly worker?: string;
  /** The computer-wide reservation it holds while it runs. */
  readonly reservationId?: string;
  /** A mode change's bot and target computer (`computerId` is the computer the bot leaves). */
  readonly modeChange?: ModeChange;
  /** A mode change's reservation of its target computer: it holds both. */
  readonly targetReservationId?: string;
  /** Times by the state store's clock (milliseconds since the epoch). */
  readonly requestedAt: number;
  readonly startedAt?: number;
  readonly heartbeatAt?: number;
  readonly finishedAt?: number;
  readonly stages: readonly OperationStage[];
  /** Things a person should know, e.g. that unsaved work may be lost. */
  readonly warnings: readonly string[];
  readonly error?: { readonly code: ErrorCode; readonly message: string };
  /** Set once the owner released an interrupted operation, asserting its workers stopped. */
  readonly released?: { readonly at: number; readonly by: string };
  /**
   * Set by its own worker once every provider call it made had returned
   * after it was interrupted (a paused or cut-off worker that came back):
   * its reservation is released with it, so recovery is available without
   * `releaseInterrupted`. An interrupted operation without it may still
   * have provider calls in flight: the stage it shows `running`.
   */
  readonly settled?: { readonly at: number };
  /** The store record's version, for compare-and-set. */
  readonly version: number;
}
