import type { ScreenAuthority } from "../authority/screen-authority.js";
import type { AuthorityCheck } from "./authority-check.js";
import type { LiveSockets } from "./live-sockets.js";
import type { ScreenBridge } from "./screen-bridge.js";

/**
 * Control and terminal sockets live only while the authority allows
 * control: re-asks it about each one every `intervalMs`, and at once when
 * the authority reports control ended for that bot.
 */
export class ControlWatch {
  private readonly unwatch: (() => void) | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    authority: ScreenAuthority,
    private readonly sockets: LiveSockets,
    private readonly check: AuthorityCheck,
    intervalMs: number,
    private readonly unavailableGraceMs: number,
  ) {
    this.unwatch = authority.watch?.((change) => {
      if (change?.kind !== "control-ended") return;
      for (const bridge of this.sockets.bridges) {
        const { mode, computerId, botId } = bridge.capability;
        if (mode !== "view" && computerId === change.computerId && botId === change.botId) void this.recheck(bridge);
      }
    });
    this.timer = setInterval(() => {
      for (const bridge of this.sockets.bridges) if (bridge.capability.mode !== "view") void this.recheck(bridge);
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.unwatch?.();
  }

  /** Asks the authority again about a live control socket; closes it ("revoked") once not allowed. */
  private async recheck(bridge: ScreenBridge): Promise<void> {
    if (bridge.checking) return;
    bridge.checking = true;
    try {
      const verdict = await this.check.verdict(bridge.capability);
      if (verdict === "allowed") bridge.lastAllowedAt = performance.now();
      else if (
        verdict !== "authority_unavailable" ||
        performance.now() - bridge.lastAllowedAt > this.unavailableGraceMs
      )
        bridge.close("revoked", 1008, "revoked");
    } finally {
      bridge.checking = false;
    }
  }
}
