import type { SandboxProvider } from "@agent-computer/core";
import type { ComputerRecord, LeaseEngine } from "@agent-computer/leases";
import type { ComputerOperations } from "./computer-operations.js";
import type { DeploymentLedger } from "./deployment-ledger.js";

/** What the reconciler needs from its runtime. Implemented by `ComputerRuntime`; not for app code. */
export interface ReconcileHost {
  readonly provider: SandboxProvider;
  readonly leases: LeaseEngine;
  readonly ledger: DeploymentLedger;
  readonly operations: ComputerOperations;
  /** The labels every machine of this deployment carries. */
  readonly deploymentLabels: Readonly<Record<string, string>>;
  /** The label key that names a machine's computer id. */
  readonly computerLabel: string;
  /** Clears the record's ref and closes its open stretch as `reconciled`. */
  forgetGoneMachine(record: ComputerRecord): Promise<void>;
}
