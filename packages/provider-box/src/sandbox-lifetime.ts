import type { BoatClient } from "./boat-client.js";

/** op:update's `ttlSeconds` range: 1 s to 30 days. */
const MOST_TTL_SECONDS = 2_592_000;

/**
 * Keeps a sandbox's auto-stop a window ahead of its last use.
 *
 * Boat archives a sandbox `ttlSeconds` after it started (created or
 * resumed), not after its last activity: boat-v1.yaml's examples show
 * `archiveAfter` = `createdAt` + the TTL, unmoved by later calls, and no
 * operation touches or extends a sandbox. The only lever is op:update's
 * `ttlSeconds`, and the definition does not say whether a new value counts
 * from the start or from the PATCH. Each refresh therefore asks for
 * "the time since the base, plus the window", and takes the base back
 * from the answer (`archiveAfter` minus the TTL sent): the start if the
 * count is from the start, the PATCH's time if it is from the PATCH.
 * Either way the sandbox then archives a window after now. With no base
 * known yet (a sandbox reconnected while running), a first PATCH of the
 * bare window finds it.
 *
 * Why not `ttlSeconds: null` (no auto-stop) while the runtime's idle rules
 * stop computers: a process that dies leaves nobody to stop its sandbox,
 * and it would bill until someone deletes it. The window is that limit.
 */
export class SandboxLifetime {
  private base: number | undefined;

  constructor(
    private readonly client: BoatClient,
    private readonly sandboxId: string,
    private readonly windowSeconds: number,
    startedAt?: number,
  ) {
    this.base = startedAt;
  }

  /** The sandbox was created or resumed now (its auto-stop counts from here). */
  started(at = Date.now()): void {
    this.base = at;
  }

  /** Moves the auto-stop to a window after now. */
  async refresh(signal: AbortSignal): Promise<void> {
    if (this.base === undefined) await this.send(this.windowSeconds, signal);
    const since = Math.ceil((Date.now() - (this.base ?? Date.now())) / 1000);
    await this.send(Math.min(MOST_TTL_SECONDS, since + this.windowSeconds), signal);
  }

  private async send(ttlSeconds: number, signal: AbortSignal): Promise<void> {
    const sentAt = Date.now();
    const sandbox = await this.client.update(this.sandboxId, { ttlSeconds }, signal);
    const archiveAfter = Date.parse(sandbox.archiveAfter ?? "");
    // No archiveAfter in the answer: nothing learnt; keep the base known (the start), else count from now.
    this.base = Number.isFinite(archiveAfter) ? archiveAfter - ttlSeconds * 1000 : (this.base ?? sentAt);
  }
}
