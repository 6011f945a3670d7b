import type { DesktopOptions, DesktopSession, Machine } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { BotHolds } from "@agent-computer/leases";
import type { BrowserProxyResolver } from "./browser-proxy.js";
import type { ComputerActivities, ComputerActivity } from "./computer-activity.js";
import type { ComputerSlot } from "./computer-slot.js";
import { openBotDesktop } from "./open-bot-desktop.js";

/**
 * The screens runs keep between runs (a completed run keeps its bot's
 * desktop up, idle): recorded in the shared activity so every worker sees
 * them, and the oldest idle one torn down to make room at the screen limit.
 */
export class KeptScreens {
  constructor(
    private readonly activities: ComputerActivities,
    private readonly clock: () => number,
    private readonly holdsOf: (computerId: string, activity?: ComputerActivity) => Promise<BotHolds>,
    private readonly browserProxy?: BrowserProxyResolver,
  ) {}

  /** `options` with the bot's browser proxy filled in when the app names one and the caller gave none. */
  async optionsFor(computerId: string, botId: string, options?: DesktopOptions): Promise<DesktopOptions | undefined> {
    if (options?.proxy || !this.browserProxy) return options;
    const proxy = await this.browserProxy({ computerId, botId });
    return proxy ? { ...options, proxy } : options;
  }

  /**
   * Opens `botId`'s screen for its run through the run's fenced `machine`
   * (its kept screen when it has one). At the screen limit, the oldest idle
   * screen, one no bot drives and no person controls, is torn down to make
   * room; MULTI_SCREEN_UNAVAILABLE only when every screen is busy.
   */
  async openScreen(
    slot: ComputerSlot,
    machine: Machine,
    botId: string,
    options?: DesktopOptions,
  ): Promise<DesktopSession> {
    const withProxy = await this.optionsFor(slot.computerId, botId, options);
    for (;;) {
      try {
        const session = await openBotDesktop(machine, botId, withProxy);
        await this.forgetScreen(slot, botId);
        return session;
      } catch (error) {
        if (!AgentComputerError.is(error, "MULTI_SCREEN_UNAVAILABLE")) throw error;
        if (!(await this.evictIdleScreen(slot, botId))) throw error;
      }
    }
  }

  /** A completed run kept its bot's screen: it is idle from now, for every worker. */
  async keepScreen(slot: ComputerSlot, botId: string): Promise<void> {
    const now = this.clock();
    await this.activities.update(slot.computerId, (a) => ({ ...a, screens: { ...a.screens, [botId]: now } }));
  }

  /** The bot's screen is in use again, or gone. */
  async forgetScreen(slot: ComputerSlot, botId: string): Promise<void> {
    await this.activities.update(slot.computerId, (a) => {
      if (a.screens[botId] === undefined) return a;
      const { [botId]: _gone, ...screens } = a.screens;
      return { ...a, screens };
    });
  }

  /** Tears down `botId`'s kept screen, if it has one (deleting the bot). */
  async releaseKeptScreen(slot: ComputerSlot, machine: Machine, botId: string): Promise<void> {
    const kept = (await this.activities.get(slot.computerId))?.screens[botId];
    if (kept === undefined || !machine.openDesktop) return;
    await (await machine.openDesktop(botId)).release();
    await this.forgetScreen(slot, botId);
  }

  /**
   * Tears down the oldest kept screen that no bot drives and no person
   * controls (on any worker), other than `forBot`'s. Its browser profile
   * stays in the home. Returns false when there is none.
   */
  private async evictIdleScreen(slot: ComputerSlot, forBot: string): Promise<boolean> {
    const activity = await this.activities.get(slot.computerId);
    const kept = Object.entries(activity?.screens ?? {})
      .filter(([botId]) => botId !== forBot)
      .sort((a, b) => a[1] - b[1]);
    if (kept.length === 0) return false;
    const holds = await this.holdsOf(slot.computerId, activity);
    const raw = slot.machine;
    if (!raw?.openDesktop) return false;
    for (const [botId] of kept) {
      if (holds.executing.includes(botId) || holds.controlled.includes(botId)) continue;
      try {
        // Its screen is still up: opening returns it, no new slot; releasing frees that slot.
        await (await raw.openDesktop(botId)).release();
      } catch (error) {
        // Gone with its machine already (the limit refused a fresh one): nothing to free.
        if (!AgentComputerError.is(error, "MULTI_SCREEN_UNAVAILABLE")) throw error;
      }
      await this.forgetScreen(slot, botId);
      return true;
    }
    return false;
  }
}
