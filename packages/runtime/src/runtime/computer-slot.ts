import type { Machine } from "@agent-computer/core";
import type { ComputerOwner, ComputerScope, Lease } from "@agent-computer/leases";
import type PQueue from "p-queue";
import type { BotRun } from "./bot-run.js";

/** What one runtime process knows about one computer it serves. */
export interface ComputerSlot {
  readonly computerId: string;
  /**
   * The scope a run of this process gave the computer (`startRun`), written
   * into its record when the record has none yet; undefined while only its
   * id is known. The record's scope is the one that counts.
   */
  scope: ComputerScope | undefined;
  /** Whom a run of this process said the computer's time counts for; fills a record that has no owner yet. */
  owner: ComputerOwner | undefined;
  /** The machine while the computer runs; undefined when suspended or not started yet. */
  machine: Machine | undefined;
  /** performance.now() when the machine was last found alive. */
  checkedAt: number;
  /** Lifecycle steps (ensure, checkpoint, suspend) of this computer, one at a time. */
  readonly lifecycle: PQueue;
  /** Runs of this process that use the computer now. */
  readonly runs: Set<BotRun>;
  /** People controlling a screen of this computer through this runtime. */
  readonly takeovers: Set<Lease>;
  /** A run ended while others worked: the last one to finish saves. */
  checkpointPending: boolean;
  /** By the runtime's clock: the last time a run used the computer. */
  lastActivityAt: number;
  /** By the runtime's clock: when the current stretch of running began. */
  stretchStartedAt: number | undefined;
}
