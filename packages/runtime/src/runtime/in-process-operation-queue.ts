import type { OperationQueue } from "./operation-queue.js";

/**
 * An `OperationQueue` inside this process: ids published before a worker
 * subscribes wait for it; each id goes to one worker. Nothing survives a
 * restart, which is fine: queued operations stay in the state store and the
 * reconciler republishes them.
 */
export class InProcessOperationQueue implements OperationQueue {
  private readonly pending: string[] = [];
  private readonly workers: ((operationId: string) => Promise<void>)[] = [];
  private next = 0;

  async publish(operationId: string): Promise<void> {
    this.pending.push(operationId);
    this.drain();
  }

  subscribe(worker: (operationId: string) => Promise<void>): () => void {
    this.workers.push(worker);
    this.drain();
    return () => {
      const at = this.workers.indexOf(worker);
      if (at >= 0) this.workers.splice(at, 1);
    };
  }

  private drain(): void {
    while (this.workers.length > 0 && this.pending.length > 0) {
      const id = this.pending.shift() as string;
      const worker = this.workers[this.next++ % this.workers.length] as (operationId: string) => Promise<void>;
      // A worker records its own failures in the operation; a throw here has nowhere better to go.
      setImmediate(() => void worker(id).catch(() => {}));
    }
  }
}
