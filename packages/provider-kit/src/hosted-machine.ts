import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import {
  HOME_TRANSFER_SCRIPTS,
  homeExportFailure,
  importHomeByScripts,
  joinHomeParts,
} from "@agent-computer/checkpoint";
import {
  AgentComputerError,
  type ExecResult,
  loggerOf,
  type OpContext,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import {
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import {
  type CommandUser,
  displayTransferFile,
  displayUserMachine,
  rootImportEnv,
  type SecondUserDisplay,
  START_TERMINAL_HOST,
  stagingTransferFile,
} from "./second-user-display.js";

/** What a hosted machine is told by its provider. */
export interface HostedMachineSettings {
  /** The home, absolute, inside the machine. */
  workspacePath: string;
  /** The machine as messages name it ("the sandbox", "the box"). */
  machineName: string;
  /** The provider's name in log lines ("e2b", "box"). */
  logName: string;
  /** How many screens a desktop may have beyond the first (the desktop runtime's `screenLimit`). */
  screenLimit?: number;
  /** Where imports unpack before the swap (checkpoint's `stagingRoot`); beside the home by default. */
  stagingRoot?: string;
  /**
   * Refreshes the service's idle timer while the machine is used (a
   * command, a file call, a desktop), at most once per `everyMs`; failures
   * are ignored (the next use tries again).
   */
  keepAlive?: {
    everyMs: number;
    refresh(): Promise<void>;
    /** The service set its timer when the machine was made or resumed: the first refresh waits `everyMs`. */
    freshAtStart?: boolean;
  };
  /**
   * The display as a second user (second-user-display.ts): the provider
   * then runs commands as the display's user and as root (`runCommandAs`)
   * and moves files as them (`uploadFile`, `downloadFile`).
   */
  displayUser?: SecondUserDisplay;
}

/**
 * One machine of a hosted service: a computer-image machine reached through
 * the service's command channel (docs/architecture.md §9). The kit does
 * what every service shares, once: exec and the home's files over
 * `runCommand` (core's CommandChannelMachine), desktops through the shared
 * Linux runtime, the home's import and export as one tar through a file
 * beside the home, the keep-alive, and refusing calls on a handle whose
 * machine it deleted. A provider adds its translation: running a command,
 * moving a file in and out, a port's URL, stop and destroy.
 */
export abstract class HostedMachine extends CommandChannelMachine {
  private spent = false;
  private lastKeepAlive = 0;
  /** Work that keeps the machine alive until it ends: commands, open desktops, exports being read. */
  private holds = 0;
  private holdTimer: ReturnType<typeof setInterval> | undefined;
  /** Counts dropHolds: a hold taken before a stop lets go of nothing taken after it. */
  private holdEra = 0;

  constructor(protected readonly hosted: HostedMachineSettings) {
    // Desktops come from the shared Linux runtime, through this machine's exec and port URLs (docs/architecture.md §4).
    super(hosted.workspacePath, (machine) => {
      const screenLimit = hosted.screenLimit ?? 0;
      const display = hosted.displayUser;
      if (!display) return new LinuxDesktopRuntime(machine, { screenLimit });
      // The display's user drives it; `launch` starts only the image's applications, as a display apart does.
      const runAs = (machine as HostedMachine).runCommandAs.bind(machine);
      return new LinuxDesktopRuntime(displayUserMachine(machine, display, runAs), {
        screenLimit,
        launchPrograms: "applications",
      });
    });
    if (hosted.keepAlive?.freshAtStart) this.lastKeepAlive = Date.now();
    this.startTerminalHostFirst();
    this.holdOpenDesktops();
  }

  /** Where the display is a second user, each desktop's open first starts the bot's terminal host (START_TERMINAL_HOST). */
  private startTerminalHostFirst(): void {
    const open = this.openDesktop;
    if (!open || !this.hosted.displayUser) return;
    (this as { openDesktop: typeof open }).openDesktop = async (botId, ctx, opts) => {
      const context = enterOperation(ctx, "desktop start");
      const started = await this.runCommand(
        { argv: [...START_TERMINAL_HOST], workingDir: "/", maxOutputBytes: 4096, timeoutMs: 30_000 },
        context,
        "start the terminal host",
      );
      if (started.exitCode !== 0) {
        throw new AgentComputerError("UNAVAILABLE", `The terminal host did not start (exit ${started.exitCode}).`);
      }
      return open(botId, context, opts);
    };
  }

  /**
   * Runs `command` as `as`: the bot's user (`runCommand`), or, where the
   * display is a second user, the display's user or root. A provider that
   * offers `displayUser` overrides this.
   */
  protected runCommandAs(as: CommandUser, command: MachineCommand, context: OpContext, what: string) {
    if (as === "bot") return this.runCommand(command, context, what);
    throw new AgentComputerError("UNSUPPORTED", `This provider cannot run a command as the ${as} user.`);
  }

  /**
   * An open desktop is work in flight: a person may be watching its screen
   * or taking it over, and nothing else calls the service meanwhile. The
   * machine is held alive from the open's start until the session's release.
   */
  private holdOpenDesktops(): void {
    const open = this.openDesktop;
    if (!open || !this.hosted.keepAlive) return;
    (this as { openDesktop: typeof open }).openDesktop = async (botId, ctx, opts) => {
      // Held from the start: a desktop starts through the resident service, not a command.
      const letGo = this.holdAlive();
      let session: Awaited<ReturnType<typeof open>>;
      try {
        session = await open(botId, ctx, opts);
      } catch (error) {
        letGo();
        throw error;
      }
      const release = session.release.bind(session);
      session.release = async (context) => {
        try {
          await release(context);
        } finally {
          letGo();
        }
      };
      return session;
    };
  }

  /** The error for a machine that no longer exists (PROVIDER_GONE, saying how to replace it). */
  abstract goneError(): AgentComputerError;
  /** Puts `data` at `file` (absolute) through the service's file transfer, as `as` (the bot's user by default). */
  protected abstract uploadFile(file: string, data: Readable, signal: AbortSignal, as?: CommandUser): Promise<void>;
  /** Reads `file` (absolute) through the service's file transfer, as a stream, as `as` (the bot's user by default). */
  protected abstract downloadFile(file: string, signal: AbortSignal, as?: CommandUser): Promise<Readable>;

  /** From now on every call on this handle says gone: its machine was deleted through it. */
  protected markSpent(): void {
    this.spent = true;
    this.dropHolds();
  }

  protected refuseSpent(): void {
    if (this.spent) throw this.goneError();
  }

  /** The machine is being used: refreshes the service's idle timer when one is due. */
  protected touch(): void {
    const keepAlive = this.hosted.keepAlive;
    if (!keepAlive || Date.now() - this.lastKeepAlive < keepAlive.everyMs) return;
    this.lastKeepAlive = Date.now();
    void keepAlive.refresh().catch(() => {});
  }

  /**
   * Keeps the service's timer fresh until the returned function is called:
   * refreshed now when due, then every `everyMs` while any hold lasts, so
   * work that outlasts the service's timeout (a command, an open desktop,
   * a transfer) is not paused under it. Calling it twice lets go once.
   */
  protected holdAlive(): () => void {
    const everyMs = this.hosted.keepAlive?.everyMs;
    if (everyMs === undefined || this.spent) return () => {};
    this.touch();
    this.holds++;
    if (!this.holdTimer) {
      this.holdTimer = setInterval(() => this.touch(), everyMs);
      this.holdTimer.unref();
    }
    const era = this.holdEra;
    let held = true;
    return () => {
      if (!held || era !== this.holdEra) return;
      held = false;
      this.holds--;
      if (this.holds === 0) this.dropHolds();
    };
  }

  /** Ends every hold: the machine stopped or went, so nothing of it is kept alive any more. */
  protected dropHolds(): void {
    this.holdEra++;
    this.holds = 0;
    if (this.holdTimer) clearInterval(this.holdTimer);
    this.holdTimer = undefined;
  }

  /** Runs `work` held alive (holdAlive) until it settles. */
  protected async keptAlive<T>(work: () => Promise<T>): Promise<T> {
    const letGo = this.holdAlive();
    try {
      return await work();
    } finally {
      letGo();
    }
  }

  /** A fresh name beside the home (on its filesystem, so a final move is a rename). */
  protected transferFile(suffix = ".tar"): string {
    const slash = this.workspacePath.lastIndexOf("/");
    const name = `.${this.workspacePath.slice(slash + 1)}.transfer-${randomBytes(6).toString("hex")}${suffix}`;
    return `${this.workspacePath.slice(0, slash)}/${name}`;
  }

  /** Runs one of the kit's or checkpoint's shell scripts from `/` with its arguments, as `as`. */
  protected runScript(
    script: string,
    name: string,
    args: string[],
    signal: AbortSignal,
    what: string,
    as: CommandUser = "bot",
    env?: Record<string, string>,
  ): Promise<ExecResult> {
    const command = { argv: ["sh", "-c", script, name, ...args], workingDir: "/", maxOutputBytes: 64 * 1024 };
    return this.runCommandAs(as, env ? { ...command, env } : command, { signal }, what);
  }

  /** Removes a transfer file, best effort, without holding up the caller. */
  protected removeLater(file: string, as: CommandUser = "bot"): void {
    void this.runScript(
      'rm -f -- "$1"',
      "remove-transfer",
      [file],
      AbortSignal.timeout(30_000),
      "remove a transfer file",
      as,
    ).catch(() => {});
  }

  /** Makes the home folder, from / (a new machine may have none yet, so a command cannot start in it). */
  async makeHome(context: OpContext): Promise<void> {
    const made = await this.runCommand(
      { argv: ["mkdir", "-p", "--", this.workspacePath], workingDir: "/", maxOutputBytes: 4096 },
      context,
      "make the home",
    );
    if (made.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `${capitalized(this.hosted.machineName)} could not make its home ${this.workspacePath} (exit ${made.exitCode}): ${text(made.stderr) || "no message"}`,
        { retryable: false },
      );
    }
  }

  /**
   * The home as one tar: checkpoint's export script writes it to a file
   * beside the home, which is read through the service's file transfer and
   * removed once the reader is done with it, however it ends. Where the
   * display is a second user, the bot's part and the profiles' part are
   * each packed by their owner, both before the reading starts (a desktop
   * resumed after the export returns must not change what it holds), and
   * read as one archive (checkpoint's joinHomeParts).
   */
  protected async exportHome(context: OpContext): Promise<Readable> {
    this.refuseSpent();
    const signal = signalOf(context, "workspace export");
    const display = this.hosted.displayUser;
    if (!display) return this.readPacked(await this.pack("exportHomeToFile", this.transferFile(), "bot", signal));
    const bot = await this.pack("exportBotPartToFile", this.transferFile(), "bot", signal);
    let profiles: PackedFile;
    try {
      profiles = await this.pack("exportProfilesPartToFile", displayTransferFile(display), "display", signal);
    } catch (error) {
      this.removeLater(bot.file, bot.as);
      throw error;
    }
    let first: Readable;
    try {
      first = await this.readPacked(bot);
    } catch (error) {
      this.removeLater(profiles.file, profiles.as);
      throw error;
    }
    return joinHomeParts(first, () => this.readPacked(profiles));
  }

  /** Runs one of checkpoint's export scripts into `file`, as `as`; a failed one leaves no file. */
  private async pack(
    script: "exportHomeToFile" | "exportBotPartToFile" | "exportProfilesPartToFile",
    file: string,
    as: CommandUser,
    signal: AbortSignal,
  ): Promise<PackedFile> {
    const args = [this.workspacePath, file];
    const packed = await this.runScript(
      HOME_TRANSFER_SCRIPTS[script],
      "export-home",
      args,
      signal,
      "export the workspace",
      as,
    );
    if (packed.exitCode !== 0) {
      this.removeLater(file, as);
      throw homeExportFailure(packed, this);
    }
    return { file, as, signal };
  }

  /** Reads a packed file, held alive while the reader takes it; the file goes once the reader is done. */
  private async readPacked({ file, as, signal }: PackedFile): Promise<Readable> {
    let tar: Readable;
    const letGo = this.holdAlive();
    try {
      tar = await this.downloadFile(file, signal, as);
    } catch (error) {
      letGo();
      this.removeLater(file, as);
      throw signal.aborted ? signal.reason : error;
    }
    tar.once("close", () => {
      letGo();
      this.removeLater(file, as);
    });
    return tar;
  }

  protected importHome(tar: Readable, context: OpContext): Promise<void> {
    return this.importInTurn(() => this.keptAlive(() => this.importNow(tar, context)));
  }

  /**
   * Replaces the home whole with checkpoint's `importHomeByScripts`: the
   * checked archive goes through the service's file transfer as a file
   * beside the home, which the machine unpacks and swaps in.
   */
  private async importNow(tar: Readable, context: OpContext): Promise<void> {
    throwIfDone(context, "workspace import");
    this.refuseSpent();
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    // Where the display is a second user, root unpacks out of the bot's reach and gives each part its owner.
    const display = this.hosted.displayUser;
    const as: CommandUser = display ? "root" : "bot";
    const env = display ? rootImportEnv(display) : undefined;
    const file = display ? stagingTransferFile(display) : this.transferFile();
    const run = (script: string, name: string, args: string[], on: AbortSignal) =>
      this.runScript(script, name, args, on, "import the workspace", as, env);
    try {
      const stats = await importHomeByScripts(tar, {
        workspacePath: this.workspacePath,
        ref: this.ref,
        machineName: this.hosted.machineName,
        signal,
        ...(this.hosted.stagingRoot ? { stagingRoot: this.hosted.stagingRoot } : {}),
        stage: async (archive, tag) => {
          await this.uploadFile(file, archive, signal, as);
          return run(HOME_TRANSFER_SCRIPTS.stageHomeFromFile, "stage-home", [this.workspacePath, tag, file], signal);
        },
        run,
      });
      loggerOf(context).info(`${this.hosted.logName} home imported`, { ref: this.ref, ...stats });
    } finally {
      stopWatching();
      this.removeLater(file, as);
    }
  }
}

/** An export's file in the machine, who packed it, and the export's signal. */
interface PackedFile {
  readonly file: string;
  readonly as: CommandUser;
  readonly signal: AbortSignal;
}

/** A command's output as short text for a message. */
export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8").trim().slice(0, 500);
}

function capitalized(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}
