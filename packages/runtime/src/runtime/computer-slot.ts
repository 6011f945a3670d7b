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
  /**
   * The record's stretch (`runs[].runId`) in which `machine` was found
   * running; undefined when not known. The same ref in the same stretch is
   * the same machine, not stopped since: a liveness check keeps its object
   * (computer-lifecycle.ts, `bringUp`).
   */
  machineStretch: string | undefined;
  /** performance.now() when the machine was last found alive. */
  checkedAt: number;
  /** Lifecycle steps (ensure, checkpoint, suspend) of this computer, one at a time. */
  readonly lifecycle: PQueue;
  /** Runs of this process that use the computer now. */
  readonly runs: Set<BotRun>;
  /** People controlling a screen of this computer through this runtime. */
  readonly takeovers: Set<Lease>;
  /** By the runtime's clock: the last time a run or person of this process used the computer (0: never). */
  lastActivityAt: number;
  /** By the runtime's clock: when this process last wrote a use to the computer's shared activity. */
  activityWrittenAt: number;
  /** Bots this process knows are in the computer's shared activity record (a fenced write proved it). */
  readonly knownBots: Set<string>;
}
