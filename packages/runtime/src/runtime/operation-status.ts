/**
 * Where an operation is. `interrupted`: its worker stopped heartbeating for
 * ten minutes; the computer stays reserved until the worker's provider calls
 * settle (it comes back, finds itself interrupted, and marks the operation
 * `settled`) or, for a worker gone for good, the owner releases it with
 * `releaseInterrupted({ id, workersStopped: true })`. Either makes recovery
 * available; a stale heartbeat alone never does.
 */
export type OperationStatus = "queued" | "running" | "interrupted" | "succeeded" | "failed";
