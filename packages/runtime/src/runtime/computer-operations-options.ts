import type { Logger } from "@agent-computer/core";
import type { OperationQueue } from "./operation-queue.js";

/** Options of a runtime's operations (`ComputerRuntimeOptions.operations`). */
export interface ComputerOperationsOptions {
  /** Hands queued operations to workers. Default: an `InProcessOperationQueue`. */
  queue?: OperationQueue;
  /** Whether this runtime claims and runs operations from the queue (default true). */
  worker?: boolean;
  /** This worker's name in the operations it claims (default: a random id). */
  workerId?: string;
  /** How often a running operation heartbeats (default 30 s; well under the ten-minute timeout). */
  heartbeatMs?: number;
  logger?: Logger;
}
