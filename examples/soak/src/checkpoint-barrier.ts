/**
 * Parks every bot between steps so a checkpoint can end all their runs at
 * once: on a Team computer a run that ends while another bot works only
 * defers the save, and the last run to end takes it
 * (`ComputerRuntime.runEnded`). The last bot to park runs the checkpoint;
 * all resume after it.
 */
export class CheckpointBarrier {
  private pending: { arrived: number; done: Promise<void>; resolve: () => void } | undefined;
  private running: Promise<void> = Promise.resolve();
  private busy = false;

  constructor(
    private parties: number,
    private readonly checkpoint: () => Promise<void>,
  ) {}

  /** Whether a checkpoint waits for bots to park. */
  get requested(): boolean {
    return this.pending !== undefined;
  }

  /** Asks every bot to park after its current step. Ignored while one is pending or running. */
  request(): void {
    if (this.pending || this.busy) return;
    let resolve: () => void = () => {};
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    this.pending = { arrived: 0, done, resolve };
  }

  /** Between steps: parks when a checkpoint is requested, until it is done. */
  async pass(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    pending.arrived++;
    this.startIfAllParked();
    await pending.done;
  }

  /** A bot that stopped working no longer holds the others up. */
  leave(): void {
    this.parties--;
    this.startIfAllParked();
  }

  /** Resolves once no checkpoint is running or requested. */
  async idle(): Promise<void> {
    await this.pending?.done;
    await this.running;
  }

  private startIfAllParked(): void {
    const pending = this.pending;
    if (!pending || pending.arrived < this.parties) return;
    this.pending = undefined;
    this.busy = true;
    this.running = this.checkpoint().finally(() => {
      this.busy = false;
      pending.resolve();
    });
  }
}
