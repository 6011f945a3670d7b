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
    const frozen = Promise.allSettled(starts).then(() => retryWhileFreezerGivesUp(freeze));
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

const FREEZE_ATTEMPTS = 5;
const FREEZE_RETRY_MS = 200;

/**
 * Runs `freeze`, again while the engine says its freezer gave up. runc's
 * cgroup v1 freezer stops trying after a while when a process will not
 * stop (one in uninterruptible I/O, under a loaded CI machine's disk) and
 * thaws the container back: a transient of this machine, not an answer a
 * service would give. Left alone, a Boat, E2B or boxd suspend failed with
 * the emulator's own INTERNAL (boxd-exec.test.ts's zero-violation check,
 * one CI run in many).
 */
export async function retryWhileFreezerGivesUp<T>(freeze: () => Promise<T>, attempts = FREEZE_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await freeze();
    } catch (error) {
      if (attempt >= attempts || !freezerGaveUp(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, FREEZE_RETRY_MS * attempt));
    }
  }
}

/** The engine's words when runc could not freeze a container's processes (`OCI runtime pause failed: unable to freeze`). */
function freezerGaveUp(error: unknown): boolean {
  return /unable to freeze|failed to freeze/i.test(error instanceof Error ? error.message : String(error));
}
