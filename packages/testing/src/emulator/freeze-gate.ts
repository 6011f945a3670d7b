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

  /**
   * Runs an exec's start once no freeze of `id` is under way, and counts
   * it as starting until `joined` (given what `start` gave) settles: the
   * engine answers a start before its process has joined the container,
   * and a freeze in between catches the joining runc too. The caller gets
   * the start's value at once.
   */
  async start<T>(id: string, start: () => Promise<T>, joined?: (started: T) => Promise<unknown>): Promise<T> {
    await this.untilThawed(id);
    const started = start();
    const settled = joined ? started.then(joined) : started;
    const underWay = this.starting.get(id) ?? new Set();
    this.starting.set(id, underWay);
    underWay.add(settled);
    void settled
      .catch(() => {})
      .finally(() => {
        underWay.delete(settled);
        if (underWay.size === 0 && this.starting.get(id) === underWay) this.starting.delete(id);
      });
    return started;
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
