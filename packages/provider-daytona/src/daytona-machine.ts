import { PassThrough, type Readable } from "node:stream";
import {
  AgentComputerError,
  checkOpContext,
  type ExecResult,
  loggerOf,
  type OpContext,
  type ProviderRef,
  signalOf,
} from "@agent-computer/core";
import { abortable, enterOperation, type MachineCommand } from "@agent-computer/core/provider-utils";
import { HostedMachine, type WakeOption } from "@agent-computer/provider-kit";
import type { Sandbox } from "@daytonaio/sdk";
import { daytonaFailure, isAuthFailure, isTransient, statusOf } from "./daytona-failure.js";
import type { DaytonaMachineHost } from "./daytona-machine-host.js";
import { ensureStarted, sandboxGone } from "./sandbox-start.js";
import { runSessionCommand, type SessionCommandHost, withoutWaking } from "./session-command.js";

/** How often a toolbox call may meet "already started, still refused" before its failure stands. */
const STARTED_RETRIES = 3;

/**
 * One Daytona sandbox, a HostedMachine of the kit. Commands go through the
 * toolbox's sessions API as the image's user; the home moves in and out as
 * one tar through the toolbox's bulk upload and download (multipart), which
 * the bench shows far faster than framed exec output. Use refreshes the
 * sandbox's activity: auto-stop is off, but the API's idle clock also
 * drives auto-archive and auto-delete. Stop keeps the sandbox (stopped, or
 * archived with `stopMode: "archive"`), and any call on a stopped or
 * archived sandbox starts it first.
 */
export class DaytonaMachine extends HostedMachine implements SessionCommandHost {
  readonly ref: ProviderRef;
  /** The start in flight, which concurrent calls join instead of starting the sandbox again. */
  private starting?: { readonly done: Promise<void>; readonly signal: AbortSignal };

  constructor(
    private readonly host: DaytonaMachineHost,
    readonly sandbox: Sandbox,
    workspacePath: string,
    screenLimit = 0,
  ) {
    super({
      workspacePath,
      machineName: "the sandbox",
      logName: "daytona",
      screenLimit,
      stagingRoot: host.stagingRoot,
      keepAlive: { everyMs: host.options.activityRefreshMs, refresh: () => sandbox.refreshActivity() },
    });
    this.ref = `daytona:${sandbox.id}`;
  }

  /**
   * One toolbox call, with the start-and-retry of transient answers
   * (Daytona #4632, #4142). Only calls that begin work start a stopped
   * sandbox; those about work already running, or cleaning up after it,
   * pass `wake: false` (session-command.ts), so a machine stopped under
   * them stays stopped.
   */
  async toolbox<T>(
    what: string,
    signal: AbortSignal,
    call: (sandbox: Sandbox) => Promise<T>,
    options: WakeOption = {},
  ): Promise<T> {
    this.refuseSpent();
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
        if (options.wake === false) await this.refuseUnlessStarted(error, what);
        else await this.startShared(signal);
        if (wasStarted && this.sandbox.state === "started" && ++startedAndRefused > STARTED_RETRIES) {
          throw daytonaFailure(error, what, this.host.secrets);
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * startedAndRefused));
      }
    }
  }

  /** For a call that must not start the sandbox: its failure stands unless the sandbox is (still) started. */
  private async refuseUnlessStarted(error: unknown, what: string): Promise<void> {
    await this.sandbox.refreshData().catch(() => {});
    if (this.sandbox.state !== "started") throw daytonaFailure(error, what, this.host.secrets);
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
   * A signed preview URL of the port: the token is in the URL itself (in
   * its host name: `https://<port>-<token>.<proxy domain>`), so whoever
   * holds the URL reaches the port without the API key. The token is kept
   * out of every message even when the answer does not name it apart.
   * Mapped through `previewUrl` where the options give one.
   */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    this.refuseSpent();
    const signal = signalOf(context, "port lookup");
    const preview = await this.control("sign a preview URL", signal, () =>
      this.sandbox.getSignedPreviewUrl(port, this.host.options.previewExpiresInSeconds),
    );
    const token = preview.token || signedTokenOf(preview.url, port);
    if (token) this.host.secrets.add(token);
    const signed = { sandboxId: this.sandbox.id, port, url: preview.url, token: token ?? "" };
    return this.host.options.previewUrl ? await this.host.options.previewUrl(signed) : preview.url;
  }

  /** Stops the sandbox (or archives it); reconnect starts it again with the home as it was. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    this.dropHolds(); // a stopped machine is kept alive by nothing
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
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("daytona machine destroyed", { ref: this.ref });
  }

  protected async uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    await this.sandbox.fs.uploadFileStream(data, file, { signal }).catch((error: unknown) => {
      throw signal.aborted ? signal.reason : this.transferError(error, "upload the home");
    });
  }

  protected async downloadFile(file: string, signal: AbortSignal): Promise<Readable> {
    const download = await this.toolbox("download the home", signal, (sandbox) =>
      sandbox.fs.downloadFileStream(file, { signal }),
    );
    const tar = new PassThrough();
    download.once("error", (error) => tar.destroy(this.transferError(error, "download the home")));
    download.pipe(tar);
    tar.once("close", () => download.destroy());
    return tar;
  }

  goneError(): AgentComputerError {
    return sandboxGone(this.ref);
  }

  private transferError(error: unknown, what: string): AgentComputerError {
    if (AgentComputerError.is(error)) return error;
    if (statusOf(error) === 404 && this.sandbox.state !== "started") return sandboxGone(this.ref);
    return daytonaFailure(error, what, this.host.secrets);
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseSpent();
    // HOME per command, not for the sandbox: see provision in daytona-provider.ts.
    const env = { HOME: this.workspacePath, ...command.env };
    return this.keptAlive(() => runSessionCommand(this, { ...command, env, signal: signalOf(context, what) }));
  }

  /**
   * Removes a transfer file after the work that made it, never starting a
   * sandbox that was stopped meanwhile: a file a stop left stays beside
   * the home, outside what an export takes, until the sandbox goes.
   */
  protected override removeLater(file: string): void {
    const signal = AbortSignal.timeout(30_000);
    const command = { argv: ["rm", "-f", "--", file], workingDir: "/", maxOutputBytes: 4096, signal };
    void runSessionCommand(withoutWaking(this), command).catch(() => {});
  }

  /** The SDK's own wait for a stop or delete, in seconds; the call's signal still ends ours first. */
  private seconds(): number {
    return Math.max(1, Math.floor(this.host.options.startTimeoutMs / 1000));
  }
}

/**
 * The token of a signed preview URL in host form, `<port>-<token>.<proxy
 * domain>` (daytona apps/api sandbox.service.ts getSignedPortPreviewUrl,
 * apps/proxy get_sandbox_target.go parseHost: the first label split at its
 * first "-"); undefined for any other URL.
 */
export function signedTokenOf(url: string, port: number): string | undefined {
  const [label] = new URL(url).hostname.split(".");
  const prefix = `${port}-`;
  return label?.startsWith(prefix) && label.length > prefix.length ? label.slice(prefix.length) : undefined;
}
