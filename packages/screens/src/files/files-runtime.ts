import type { Machine } from "@agent-computer/core";
import type { LeaseEngine } from "@agent-computer/leases";

/**
 * The parts of a `ComputerRuntime` the files service uses; a
 * `ComputerRuntime` is one.
 */
export interface FilesRuntime {
  /** The machine while the computer runs, never starting it (a stopped computer is read from the home store). */
  runningMachine(computerId: string): Promise<Machine | undefined>;
  /** The computer's record (its home key) and the user-control lease check for uploads. */
  readonly leases: Pick<LeaseEngine, "assertCurrent" | "getComputer">;
}
