import type { Machine } from "@agent-computer/core";
import type { ComputerRecord, LeaseEngine } from "@agent-computer/leases";
import type { ComputerSlot } from "./computer-slot.js";
import type { OperationStage } from "./operation-stage.js";

/** Runs one step of an operation, recording it as a stage. */
export type StageRunner = <T>(name: OperationStage["name"], work: () => Promise<T>) => Promise<T>;

/**
 * What operations need from their runtime: the same bring-up, checkpoint
 * and replacement steps runs use, so an update or recovery never copies
 * them. Implemented by `ComputerRuntime`; not for app code.
 */
export interface OperationHost {
  readonly leases: LeaseEngine;
  readonly providerKind: string;
  /** Runs `work` in the computer's lifecycle queue; idle suspension leaves the computer alone meanwhile. */
  underOperation<T>(computerId: string, work: (slot: ComputerSlot) => Promise<T>): Promise<T>;
  /** Runs of this process that use the computer now. */
  activeRuns(computerId: string): number;
  /** The machine behind the record's ref, or undefined when there is none or it is gone. Never provisions. */
  currentMachine(slot: ComputerSlot, record: ComputerRecord): Promise<Machine | undefined>;
  /** Saves `machine`'s live home under the checkpoint lease; returns the saved revision. */
  checkpointLive(slot: ComputerSlot, machine: Machine, reason: string): Promise<number>;
  /**
   * Provisions a machine with the configured provider and image, restores the
   * last saved home into it and switches `record` to it (closing the open
   * stretch as `replaced`). On failure the new machine is destroyed and the
   * record is untouched.
   */
  replaceMachine(slot: ComputerSlot, record: ComputerRecord, stage: StageRunner): Promise<Machine>;
}
