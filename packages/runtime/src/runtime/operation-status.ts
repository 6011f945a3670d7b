/**
 * Where an operation is. `interrupted`: its worker stopped heartbeating for
 * ten minutes; the computer stays reserved until the owner releases it with
 * `releaseInterrupted({ id, workersStopped: true })`.
 */
export type OperationStatus = "queued" | "running" | "interrupted" | "succeeded" | "failed";
