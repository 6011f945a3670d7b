/**
 * The port that hands queued operations to workers. A message carries only
 * an operation id: the state store is the truth, so a lost, duplicated or
 * late message is harmless (a worker claims an operation by compare-and-set
 * and ignores one already claimed; the reconciler republishes queued ones
 * whose enqueue was missed). Back it with any job queue; core ships
 * `InProcessOperationQueue`.
 */
export interface OperationQueue {
  /** Hands the id to a worker, now or later. May throw; the reconciler republishes. */
  publish(operationId: string): Promise<void>;
  /** Registers a worker; returns the function that unregisters it. */
  subscribe(worker: (operationId: string) => Promise<void>): () => void;
}
