import {
  botIdSchema,
  checkOpContext,
  type DesktopOptions,
  desktopOptionsSchema,
  loggerOf,
  type Machine,
  type OpContext,
  parseInput,
  throwIfDone,
} from "@agent-computer/core";
import type { z } from "zod";
import { browserProxyOf } from "./browser-proxy.js";
import { DesktopChannel } from "./desktop-channel.js";
import { type LinuxDesktopRuntimeOptions, linuxDesktopRuntimeOptionsSchema } from "./linux-desktop-runtime-options.js";
import { LinuxDesktopSession } from "./linux-desktop-session.js";

// Bot ids name profile folders and appear in command arguments: core's one rule keeps them plain.
export { botIdSchema };

/** A cold start brings up X, a window manager and Chromium; under load that can take a while. */
const START_TIMEOUT_MS = 120_000;
/** Every browser closes cleanly in turn; each may take up to ~20 s before it is killed. */
const QUIESCE_TIMEOUT_MS = 5 * 60_000;

/**
 * The desktop part of the provider contract over any machine's `exec`
 * (docs/architecture.md §3, §4): one desktop per bot, each on its own X display with its
 * own Chromium and a persistent profile in the home. Providers implement
 * `openDesktop` and `quiesceDesktops` with it; the in-computer `desktop`
 * command (shipped in the computer image) does the work, so every provider
 * shares one lifecycle.
 */
export class LinuxDesktopRuntime {
  private readonly options: z.output<typeof linuxDesktopRuntimeOptionsSchema>;
  private readonly channel: DesktopChannel;

  constructor(
    private readonly machine: Pick<Machine, "exec" | "workspacePath" | "portUrl">,
    options: LinuxDesktopRuntimeOptions = {},
  ) {
    this.options = parseInput(linuxDesktopRuntimeOptionsSchema, options, "LinuxDesktopRuntimeOptions");
    this.channel = new DesktopChannel(machine, this.options.command, this.options.transport);
  }

  /**
   * The bot's desktop, started when it has none (idempotent: a running
   * desktop is returned as it is, at its size). MULTI_SCREEN_UNAVAILABLE
   * when the computer's screen limit is reached.
   */
  async openDesktop(botId: string, ctx?: OpContext, opts?: DesktopOptions): Promise<LinuxDesktopSession> {
    const bot = parseInput(botIdSchema, botId, "botId");
    const options = parseInput(desktopOptionsSchema, opts ?? {}, "DesktopOptions");
    const context = checkOpContext(ctx);
    throwIfDone(context, "desktop start");
    const screen = options.screen ?? this.options.defaultScreen;
    const args = [
      "start",
      "--bot",
      bot,
      "--width",
      String(screen.width),
      "--height",
      String(screen.height),
      "--screen-limit",
      String(this.options.screenLimit),
    ];
    // Credentials go to the computer's relay over stdin, never in argv.
    const proxy = options.proxy ? browserProxyOf(options.proxy) : undefined;
    if (proxy) args.push("--proxy-server", proxy.server);
    if (proxy?.credentials) args.push("--proxy-credentials", "stdin");
    const stdin = proxy?.credentials ? new TextEncoder().encode(JSON.stringify(proxy.credentials)) : undefined;
    const { summary } = await this.run(args, context, START_TIMEOUT_MS, stdin);
    const started = summary as { display: string; width: number; height: number; windowMappedAgain?: string };
    loggerOf(context).info("desktop open", { bot, display: started.display });
    if (started.windowMappedAgain) {
      // The in-computer start recovered a browser window that stayed unmapped (desktop-lifecycle.ts, mapAgain).
      loggerOf(context).warn("desktop browser window mapped again", { bot, seen: started.windowMappedAgain });
    }
    const target = { machine: this.machine, channel: this.channel, launchPrograms: this.options.launchPrograms };
    return new LinuxDesktopSession(target, bot, started.display, {
      width: started.width,
      height: started.height,
    });
  }

  /**
   * Closes every running browser cleanly (cookies, history, session and
   * login state written to the profile) so a workspace export sees
   * consistent profiles; displays and slots stay. The returned function
   * starts the browsers again, restoring their tabs.
   */
  async quiesceDesktops(ctx?: OpContext): Promise<() => Promise<void>> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "desktop quiesce");
    const { summary } = await this.run(["quiesce"], context, QUIESCE_TIMEOUT_MS);
    const quiesced = (summary?.quiesced as string[] | undefined) ?? [];
    loggerOf(context).info("desktops quiesced", { bots: quiesced });
    let resumed = false;
    return async () => {
      if (resumed) return;
      resumed = true;
      if (quiesced.length === 0) return;
      await this.run(["resume"], {}, START_TIMEOUT_MS);
    };
  }

  /** The desktops this computer runs, by bot and display. */
  async listDesktops(ctx?: OpContext): Promise<{ bot: string; display: string; status: string }[]> {
    const context = checkOpContext(ctx);
    const { summary } = await this.run(["list"], context, 30_000);
    return (summary?.desktops as { bot: string; display: string; status: string }[] | undefined) ?? [];
  }

  /** Closes the connection to the computer's resident service (a later call opens a new one). */
  close(): void {
    this.channel.close();
  }

  private run(args: string[], ctx: OpContext, defaultTimeoutMs: number, stdin?: Uint8Array<ArrayBuffer>) {
    return this.channel.run(args, ctx, { defaultTimeoutMs, ...(stdin ? { stdin } : {}) });
  }
}
