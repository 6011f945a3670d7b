import { posix } from "node:path";
import type { DesktopSession, PageSecretText, ProviderCapabilities } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { BotRun } from "../runtime/bot-run.js";
import type { ActivityEvent } from "./activity-event.js";

/** Options of `ComputerToolSession`. */
export interface ComputerToolSessionOptions {
  /** The run the tools act for: its computer and bot. */
  run: BotRun;
  /** What the run's provider can do (`runtime.capabilities`). */
  capabilities: ProviderCapabilities;
  /** Whether the model reads images; without vision, no screenshot tools are offered. */
  vision: boolean;
  /** Receives a `computer.command` event for every mutating call. */
  onActivity?: (event: ActivityEvent) => void;
  /** Desktop applications `launch_app` may start, by name, as argv with `{home}` and `{bot}` filled in (default: the image's browser). */
  apps?: Readonly<Record<string, readonly string[]>>;
  /**
   * Whether a shell command that exits non-zero or times out is an error
   * result (`isError`, with code COMMAND_FAILED or TIMEOUT) rather than an
   * ordinary result the model reads the exit code in. Default false.
   */
  failedCommandIsError?: boolean;
}

/**
 * Apps the computer image declares, as argv; `{home}` and `{bot}` stand for
 * the home's path in the machine and the bot's id. The browser opens a new
 * window of the bot's own Chromium (its profile), never a second profile.
 */
export const DEFAULT_DESKTOP_APPS: Readonly<Record<string, readonly string[]>> = {
  browser: ["chromium", "--user-data-dir={home}/.browser-profiles/{bot}", "--new-window"],
};

/**
 * The state the tools of one (computer, bot) share across calls: the last
 * frame the model saw (to omit identical screenshots) and its last desktop
 * action (to refuse a repeated action that changed nothing).
 */
export class ComputerToolSession {
  readonly run: BotRun;
  readonly capabilities: ProviderCapabilities;
  readonly vision: boolean;
  readonly apps: Readonly<Record<string, readonly string[]>>;
  readonly failedCommandIsError: boolean;
  /** Hash of the last frame whose image a tool result carried. */
  lastFrameHash: string | undefined;
  /** The last `computer_act` batch and whether the screen changed after it. */
  lastAct: { key: string; changed: boolean } | undefined;
  private readonly onActivity: ((event: ActivityEvent) => void) | undefined;
  /** Secret values this session typed, to their names: masked in every page text it returns. */
  private readonly typedSecrets = new Map<string, string>();

  constructor(options: ComputerToolSessionOptions) {
    this.run = options.run;
    this.capabilities = options.capabilities;
    this.vision = options.vision;
    this.apps = options.apps ?? DEFAULT_DESKTOP_APPS;
    this.failedCommandIsError = options.failedCommandIsError ?? false;
    this.onActivity = options.onActivity;
  }

  /** A path the model gave, relative to the bot's folder, as a home-relative path. */
  homePath(path: string): string {
    if (path.startsWith("/")) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        this.run.workdir === "."
          ? `Invalid path "${path}": give a path relative to your home, e.g. "notes.txt" or "reports/q3.csv".`
          : `Invalid path "${path}": give a path relative to your folder (${this.run.workdir}), e.g. "notes.txt" or "../../shared/data.csv".`,
      );
    }
    return posix.normalize(posix.join(this.run.workdir, path));
  }

  /**
   * The value of the vault secret `name` for this bot, to hand to the page
   * browser and nothing else. The session remembers it so no later page
   * text of this session shows it (`maskTypedSecrets`).
   */
  async secretText(name: string): Promise<PageSecretText> {
    const secret = await this.run.secretText(name);
    this.typedSecrets.set(secret.value, secret.name);
    return secret;
  }

  /**
   * `text` with every secret this session typed replaced by `[secret <name>]`:
   * a page that echoes a typed value (a greeting with the user name, a token
   * shown back) does not put it in front of the model.
   */
  maskTypedSecrets(text: string): string {
    let out = text;
    for (const [value, name] of this.typedSecrets) out = out.split(value).join(`[secret ${name}]`);
    return out;
  }

  async desktop(): Promise<DesktopSession> {
    return this.run.desktop();
  }

  record(event: Omit<ActivityEvent, "type" | "computerId" | "botId" | "at">): void {
    this.onActivity?.({
      type: "computer.command",
      computerId: this.run.computerId,
      botId: this.run.botId,
      at: Date.now(),
      ...event,
    });
  }
}
