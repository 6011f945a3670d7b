/**
 * Keeps a container's exec starts and its freezes apart. Docker freezes a
 * container's processes for a commit (and a pause); an exec that starts
 * while the freezer takes hold can hang, and the freeze with it, for good:
 * a Boat emulator archiving a sandbox under a command's poll left the
 * container paused with `runc exec` stuck until it was killed by hand
 * (packages/provider-box/test/box-exec.test.ts, "a stop during a command").
 * So a freeze waits for the starts under way, and a start for the freeze.
 */
export class FreezeGate {
  private readonly freezing = new Map<string, Promise<unknown>>();
  private readonly starting = new Map<string, Set<Promise<unknown>>>();

  /** Runs an exec's start once no freeze of `id` is under way. */
  async start<T>(id: string, start: () => Promise<T>): Promise<T> {
    await this.untilThawed(id);
    const started = start();
    const underWay = this.starting.get(id) ?? new Set();
    this.starting.set(id, underWay);
    underWay.add(started);
    try {
      return await started;
    } finally {
      underWay.delete(started);
      if (underWay.size === 0 && this.starting.get(id) === underWay) this.starting.delete(id);
    }
  }

  /** Runs `freeze` once the starts under way in `id` have started, holding new ones until it ends. */
  async freeze<T>(id: string, freeze: () => Promise<T>): Promise<T> {
    await this.untilThawed(id);
    const starts = [...(this.starting.get(id) ?? [])];
    const frozen = Promise.allSettled(starts).then(freeze);
    this.freezing.set(id, frozen);
    try {
      return await frozen;
    } finally {
      if (this.freezing.get(id) === frozen) this.freezing.delete(id);
    }
  }

  private async untilThawed(id: string): Promise<void> {
    for (let freeze = this.freezing.get(id); freeze; freeze = this.freezing.get(id)) {
      await freeze.catch(() => {});
    }
  }
}
