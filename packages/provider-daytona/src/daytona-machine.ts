import { randomBytes } from "node:crypto";
import { PassThrough, type Readable } from "node:stream";
import { HOME_TRANSFER_SCRIPTS, homeExportFailure, importHomeByScripts } from "@agent-computer/checkpoint";
import {
  AgentComputerError,
  checkOpContext,
  type ExecResult,
  loggerOf,
  type OpContext,
  type ProviderRef,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import {
  abortable,
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type { Sandbox } from "@daytonaio/sdk";
import { daytonaFailure, isAuthFailure, isTransient, statusOf } from "./daytona-failure.js";
import type { DaytonaMachineHost } from "./daytona-machine-host.js";
import { ensureStarted, sandboxGone } from "./sandbox-start.js";
import { runSessionCommand, type SessionCommandHost } from "./session-command.js";

/** How often a toolbox call may meet "already started, still refused" before its failure stands. */
const STARTED_RETRIES = 3;

/**
 * One Daytona sandbox. Commands, file calls and the home's export and
 * import go through the toolbox's sessions API as the image's user; the
 * home is a folder inside the sandbox, moved in and out as one tar stream.
 * Stop keeps the sandbox (stopped, or archived with `stopMode: "archive"`),
 * and any call on a stopped or archived sandbox starts it first.
 */
export class DaytonaMachine extends CommandChannelMachine implements SessionCommandHost {
  readonly ref: ProviderRef;
  private deleted = false;
  private lastActivity = 0;
  /** The start in flight, which concurrent calls join instead of starting the sandbox again. */
  private starting?: { readonly done: Promise<void>; readonly signal: AbortSignal };

  constructor(
    private readonly host: DaytonaMachineHost,
    readonly sandbox: Sandbox,
    workspacePath: string,
    screenLimit = 0,
  ) {
    // Desktops come from the shared Linux runtime, through this machine's exec (docs/architecture.md §4).
    super(workspacePath, (machine) => new LinuxDesktopRuntime(machine, { screenLimit }));
    this.ref = `daytona:${sandbox.id}`;
  }

  /** One toolbox call, with the start-and-retry of transient answers (Daytona #4632, #4142). */
  async toolbox<T>(what: string, signal: AbortSignal, call: (sandbox: Sandbox) => Promise<T>): Promise<T> {
    this.refuseDeleted();
    let startedAndRefused = 0;
    for (;;) {
      try {
        return await call(this.sandbox);
      } catch (error) {
        if (AgentComputerError.is(error)) throw error;
        if (signal.aborted) throw signal.reason;
        if (isAuthFailure(error)) throw daytonaFailure(error, what, this.host.secrets);
        if (statusOf(error) !== 404 && !isTransient(error)) throw daytonaFailure(error, what, this.host.secrets);
        const wasStarted = this.sandbox.state === "started";
        await this.startShared(signal);
        if (wasStarted && this.sandbox.state === "started" && ++startedAndRefused > STARTED_RETRIES) {
          throw daytonaFailure(error, what, this.host.secrets);
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * startedAndRefused));
      }
    }
  }

  /** A REST call about this sandbox, with the same retries; 404 is PROVIDER_GONE. */
  private async control<T>(what: string, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    const until = Date.now() + this.host.options.startTimeoutMs;
    for (;;) {
      try {
        return await abortable(call(), signal);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (AgentComputerError.is(error)) throw error;
        if (statusOf(error) === 404) throw sandboxGone(this.ref);
        if (isAuthFailure(error) || !isTransient(error) || Date.now() >= until) {
          throw daytonaFailure(error, what, this.host.secrets);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /**
   * Brings the sandbox to "started" once for every call that finds it
   * stopped or archived at the same time (a command and a background
   * cleanup, two tool calls): one start request, not one per caller. A
   * caller whose own signal is live outlives a shared start that another
   * caller's abort ended, and starts again itself.
   */
  private async startShared(signal: AbortSignal): Promise<void> {
    for (;;) {
      const starting = this.starting ?? this.startOwn(signal);
      try {
        return await abortable(starting.done, signal);
      } catch (error) {
        if (signal.aborted || starting.signal === signal || !starting.signal.aborted) throw error;
      }
    }
  }

  private startOwn(signal: AbortSignal): { done: Promise<void>; signal: AbortSignal } {
    const starting = {
      done: ensureStarted(this.sandbox, this.startContext(signal)).finally(() => {
        if (this.starting === starting) this.starting = undefined;
      }),
      signal,
    };
    // Awaited by whoever is still waiting; one that gave up must not leave it unhandled.
    starting.done.catch(() => {});
    this.starting = starting;
    return starting;
  }

  private startContext(signal: AbortSignal) {
    return { ref: this.ref, secrets: this.host.secrets, signal, timeoutMs: this.host.options.startTimeoutMs };
  }

  /**
   * A signed preview URL of the port: the token is in the URL itself, so
   * whoever holds the URL reaches the port without the API key. Mapped
   * through `previewUrl` where the options give one; its query is kept.
   */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    this.refuseDeleted();
    const signal = signalOf(context, "port lookup");
    const preview = await this.control("sign a preview URL", signal, () =>
      this.sandbox.getSignedPreviewUrl(port, this.host.options.previewExpiresInSeconds),
    );
    if (preview.token) this.host.secrets.add(preview.token);
    const signed = { sandboxId: this.sandbox.id, port, url: preview.url, token: preview.token };
    return this.host.options.previewUrl ? this.host.options.previewUrl(signed) : preview.url;
  }

  /** Stops the sandbox (or archives it); reconnect starts it again with the home as it was. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseDeleted();
    const signal = signalOf(context, "stop");
    const archive = this.host.options.stopMode === "archive";
    try {
      await this.control("stop the sandbox", signal, async () => {
        await this.sandbox.refreshData();
        if (this.sandbox.state === "archived" || (!archive && this.sandbox.state === "stopped")) return;
        if (this.sandbox.state !== "stopped") await this.sandbox.stop(this.seconds());
        if (archive) await this.sandbox.archive();
      });
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a deleted sandbox is fine
      throw error;
    }
    loggerOf(context).info("daytona machine stopped", { ref: this.ref, archived: archive });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    const signal = signalOf(context, "destroy");
    try {
      await this.control("delete the sandbox", signal, () => this.sandbox.delete(this.seconds()));
    } catch (error) {
      if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
    }
    this.deleted = true;
    loggerOf(checkOpContext(ctx)).info("daytona machine destroyed", { ref: this.ref });
  }

  /**
   * The home as one GNU tar stream: written by checkpoint's export script to
   * a file beside the home, then streamed through the toolbox's bulk
   * download (multipart), which the bench shows far faster than framed
   * exec output; the file is removed once the stream ends.
   */
  protected async exportHome(context: OpContext): Promise<Readable> {
    this.refuseDeleted();
    const signal = signalOf(context, "workspace export");
    const file = this.transferFile();
    const written = await runSessionCommand(this, {
      argv: ["sh", "-c", HOME_TRANSFER_SCRIPTS.exportHomeToFile, "export-home", this.workspacePath, file],
      workingDir: "/",
      maxOutputBytes: 64 * 1024,
      signal,
    });
    if (written.exitCode !== 0) {
      this.removeLater(file);
      throw homeExportFailure(written, this);
    }
    let download: Readable;
    try {
      download = await this.toolbox("download the home", signal, (sandbox) =>
        sandbox.fs.downloadFileStream(file, { signal }),
      );
    } catch (error) {
      this.removeLater(file);
      throw error;
    }
    const tar = new PassThrough();
    download.once("error", (error) => tar.destroy(this.transferError(error, "download the home")));
    download.pipe(tar);
    // However the reader ends it, the file goes.
    tar.once("close", () => {
      download.destroy();
      this.removeLater(file);
    });
    return tar;
  }

  protected importHome(tar: Readable, context: OpContext): Promise<void> {
    return this.importInTurn(() => this.importNow(tar, context));
  }

  /**
   * Replaces the home whole with checkpoint's `importHomeByScripts`: the
   * checked archive goes through the toolbox's bulk upload (multipart) as a
   * file beside the home, which the sandbox unpacks and swaps in.
   */
  private async importNow(tar: Readable, context: OpContext): Promise<void> {
    throwIfDone(context, "workspace import");
    this.refuseDeleted();
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    const file = this.transferFile();
    const run = (script: string, name: string, args: string[], on: AbortSignal) =>
      runSessionCommand(this, {
        argv: ["sh", "-c", script, name, ...args],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
        signal: on,
      });
    try {
      const stats = await importHomeByScripts(tar, {
        workspacePath: this.workspacePath,
        ref: this.ref,
        machineName: "the sandbox",
        signal,
        stagingRoot: this.host.stagingRoot,
        stage: async (archive, tag) => {
          await this.sandbox.fs.uploadFileStream(archive, file, { signal }).catch((error: unknown) => {
            throw signal.aborted ? signal.reason : this.transferError(error, "upload the home");
          });
          return run(HOME_TRANSFER_SCRIPTS.stageHomeFromFile, "stage-home", [this.workspacePath, tag, file], signal);
        },
        run,
      });
      loggerOf(context).info("daytona home imported", { ref: this.ref, ...stats });
    } finally {
      stopWatching();
      this.removeLater(file);
    }
  }

  private transferFile(): string {
    const slash = this.workspacePath.lastIndexOf("/");
    return `${this.workspacePath.slice(0, slash)}/.${this.workspacePath.slice(slash + 1)}.transfer-${randomBytes(6).toString("hex")}.tar`;
  }

  /** Removes a transfer file, best effort, without holding up the caller. */
  private removeLater(file: string): void {
    void runSessionCommand(this, {
      argv: ["rm", "-f", "--", file],
      workingDir: "/",
      maxOutputBytes: 4096,
      signal: AbortSignal.timeout(30_000),
    }).catch(() => {});
  }

  private transferError(error: unknown, what: string): AgentComputerError {
    if (AgentComputerError.is(error)) return error;
    if (statusOf(error) === 404 && this.sandbox.state !== "started") return sandboxGone(this.ref);
    return daytonaFailure(error, what, this.host.secrets);
  }

  /** Makes the home folder (provision does, before anything runs in it). */
  async makeHome(context: OpContext): Promise<void> {
    const made = await this.runCommand(
      { argv: ["mkdir", "-p", "--", this.workspacePath], workingDir: "/", maxOutputBytes: 4096 },
      context,
      "make the home",
    );
    if (made.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The sandbox could not make its home ${this.workspacePath} (exit ${made.exitCode}): ${text(made.stderr) || "no message"}`,
        { retryable: false },
      );
    }
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseDeleted();
    this.touch();
    return runSessionCommand(this, { ...command, signal: signalOf(context, what) });
  }

  /**
   * Refreshes the sandbox's activity at most once a refresh interval while
   * the machine is used: auto-stop is off, but the API's idle clock also
   * drives auto-archive and auto-delete.
   */
  private touch(): void {
    const now = Date.now();
    if (now - this.lastActivity < this.host.options.activityRefreshMs) return;
    this.lastActivity = now;
    void this.sandbox.refreshActivity().catch(() => {});
  }

  /** The SDK's own wait for a stop or delete, in seconds; the call's signal still ends ours first. */
  private seconds(): number {
    return Math.max(1, Math.floor(this.host.options.startTimeoutMs / 1000));
  }

  private refuseDeleted(): void {
    if (this.deleted) throw sandboxGone(this.ref);
  }
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8").trim().slice(0, 500);
}
