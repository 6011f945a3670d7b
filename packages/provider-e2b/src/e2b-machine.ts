import { Readable } from "node:stream";
import {
  AgentComputerError,
  checkOpContext,
  type ExecResult,
  loggerOf,
  type MachineFiles,
  normalizeHomePath,
  type OpContext,
  type ProviderRef,
  signalOf,
} from "@agent-computer/core";
import { abortable, enterOperation, type MachineCommand } from "@agent-computer/core/provider-utils";
import {
  abortableSleep,
  type CommandUser,
  type ComputerQuarantine,
  downloadInParts,
  type FileChannel,
  HostedMachine,
  removeFileAndParts,
  type SecondUserDisplay,
  statusOfFailure,
  text,
  uploadInParts,
} from "@agent-computer/provider-kit";
import type { ConnectionOpts } from "e2b";
import { E2B_DISPLAY_USER, e2bChromiumPolicy, SECOND_USER_SETUP } from "./e2b-display-user.js";
import { e2bFailure, sdkStatus, withControlPlaneRetry } from "./e2b-failure.js";
import type { ResolvedE2bProviderOptions } from "./e2b-provider-options.js";
import { type EnvdCommandHost, runEnvdCommand } from "./envd-command.js";
import { processHeaders, processRpcOf } from "./envd-process.js";
import { PLACE_EXIT, PLACE_UPLOAD } from "./place-upload-script.js";
import type { SandboxSdk } from "./sandbox-sdk.js";

/** How long a quarantine's pause is tried at most, retries included (the control plane's deadline when shorter). */
const QUARANTINE_PAUSE_MS = 30_000;

/**
 * Parts where bytes move in parts (Novita): one request at a time, since
 * the SDK's deadline starts when a request is asked for, and 4 MiB each,
 * so a part fits `requestTimeoutMs` with room on a slow link.
 */
const NOVITA_PARTS = { inFlightMost: 1, partBytes: 4 * 1024 * 1024 };

/** What every machine of one provider shares. */
export interface E2bMachineHost {
  readonly sdk: SandboxSdk;
  readonly quarantine: ComputerQuarantine;
  readonly options: ResolvedE2bProviderOptions;
  /** The SDK's connection options (key, URLs, request timeout); never logged. */
  connection(): ConnectionOpts;
}

/**
 * One sandbox, a HostedMachine of the kit. Commands go through envd's
 * process service as the template's user, bulk bytes (file writes, the
 * home's export and import) through envd's /files; stop pauses the
 * sandbox (processes and memory kept), destroy kills it.
 */
export class E2bMachine extends HostedMachine {
  readonly ref: ProviderRef;
  private readonly commands: EnvdCommandHost;

  constructor(
    private readonly host: E2bMachineHost,
    readonly sandbox: InstanceType<SandboxSdk["Sandbox"]>,
    screenLimit = 0,
    displayUser?: SecondUserDisplay,
  ) {
    super({
      workspacePath: host.options.workspacePath,
      machineName: "the sandbox",
      logName: "e2b",
      screenLimit,
      ...(displayUser ? { displayUser } : {}),
      ...(host.options.stagingDir ? { stagingRoot: host.options.stagingDir } : {}),
      // The sandbox's timeout counts from create or connect (both set it): while the
      // machine is used it is set again, so a long command is not paused under it.
      keepAlive: {
        everyMs: host.options.keepAliveMs ?? Math.max(1_000, host.options.timeoutMs / 4),
        refresh: () => sandbox.setTimeout(host.options.timeoutMs, { requestTimeoutMs: 30_000 }),
        freshAtStart: true,
      },
    });
    this.ref = `${host.sdk.kind}:${sandbox.sandboxId}` as ProviderRef;
    this.commands = {
      rpc: processRpcOf(sandbox),
      headers: processHeaders(host.options.user),
      failure: (error, what) => this.transportFailure(error, what),
      killUnconfirmed: (what) => this.killUnconfirmed(what),
    };
    // Bulk bytes go through envd's /files (raw octet-stream); list and read stay on ExecHomeFiles.
    const files = this.files;
    (this as { files: MachineFiles }).files = {
      ...files,
      write: (path, data, ctx) => {
        if (!(data instanceof Uint8Array) && typeof (data as Readable | undefined)?.pipe !== "function") {
          throw new AgentComputerError("INVALID_ARGUMENT", "Invalid file data: expected a Uint8Array or a Readable.");
        }
        return this.writeFile(path, data, enterOperation(ctx, "write a file"));
      },
    };
  }

  protected uploadFile(file: string, data: Readable, signal: AbortSignal, as: CommandUser = "bot"): Promise<void> {
    return this.upload(file, data, signal, "import the workspace", as);
  }

  /** Reads `file` through envd's /files (raw bytes, read with backpressure; in parts where the SDK needs it). */
  protected async downloadFile(file: string, signal: AbortSignal, as: CommandUser = "bot"): Promise<Readable> {
    if (this.host.sdk.transfersInParts)
      return downloadInParts(this.inParts("export the workspace", as), file, signal, NOVITA_PARTS);
    try {
      const stream = await this.sandbox.files.read(file, { format: "stream", user: this.userOf(as), signal });
      return Readable.fromWeb(stream as import("node:stream/web").ReadableStream<Uint8Array>);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw await this.transportFailure(error, "export the workspace");
    }
  }

  /**
   * Streams `data` to `path` (absolute) through envd's /files as the
   * sandbox user. Always as a stream: the SDK buffers bytes or a Blob and
   * bounds them by `requestTimeoutMs`, a stream it does not.
   */
  private async upload(
    path: string,
    data: Uint8Array | Readable,
    signal: AbortSignal,
    what: string,
    as: CommandUser = "bot",
  ): Promise<void> {
    const source = data instanceof Uint8Array ? Readable.from([data]) : data;
    if (this.host.sdk.transfersInParts)
      return uploadInParts(this.inParts(what, as), source, path, signal, NOVITA_PARTS);
    const body = Readable.toWeb(source) as unknown as ReadableStream<Uint8Array>;
    try {
      await this.sandbox.files.write(path, body, { user: this.userOf(as), useOctetStream: true, signal });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw await this.transportFailure(error, what);
    }
  }

  /**
   * /files in parts (the kit's uploadInParts and downloadInParts, as
   * NOVITA_PARTS says), each part one request within `requestTimeoutMs`.
   * The caller's abort ends the wait at once (core's `abortable`) even
   * where the SDK would not stop the request, and no later part is sent.
   */
  private inParts(what: string, as: CommandUser = "bot"): FileChannel {
    const user = this.userOf(as);
    const failed = async (error: unknown, signal: AbortSignal) => {
      if (signal.aborted) throw signal.reason;
      throw await this.transportFailure(error, what);
    };
    return {
      sync: async (line, signal, timeoutSeconds) => {
        const done = await this.runCommandAs(
          as,
          {
            argv: ["sh", "-c", line],
            workingDir: "/",
            maxOutputBytes: 1024 * 1024,
            ...(timeoutSeconds ? { timeoutMs: timeoutSeconds * 1000 } : {}),
          },
          { signal },
          what,
        );
        return { exitCode: done.exitCode, stdout: text(done.stdout), stderr: text(done.stderr) };
      },
      writeFile: (path, bytes, signal) =>
        abortable(
          this.sandbox.files.write(path, new Blob([bytes as Uint8Array<ArrayBuffer>]), { user, signal }),
          signal,
        ).then(
          () => undefined,
          (error) => failed(error, signal),
        ),
      readFile: (path, signal) =>
        abortable(this.sandbox.files.read(path, { format: "bytes", user, signal }), signal).then(
          (bytes) => Buffer.from(bytes),
          (error) => failed(error, signal),
        ),
      redact: (line) => line,
    };
  }

  /**
   * Writes a home file: the bytes are uploaded beside the home through
   * envd's /files (streamed, not buffered whole), then moved to the path,
   * which is resolved and checked inside the sandbox as ExecHomeFiles does.
   */
  private async writeFile(path: string, data: Uint8Array | Readable, context: OpContext): Promise<void> {
    const rel = normalizeHomePath(path);
    if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "Cannot write to the home itself; name a file.");
    this.refuseSpent();
    const signal = signalOf(context, "write a file");
    const staged = this.transferFile(".file");
    await this.upload(staged, data, signal, "write a file");
    const placed = await this.runCommand(
      {
        argv: ["sh", "-c", PLACE_UPLOAD, "place-upload", this.workspacePath, rel, staged],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
      },
      context,
      "write a file",
    );
    const quoted = JSON.stringify(path);
    switch (placed.exitCode) {
      case 0:
        return;
      case PLACE_EXIT.outside:
        throw new AgentComputerError("INVALID_ARGUMENT", `Invalid path ${quoted}: it leads out of the home.`);
      case PLACE_EXIT.wrongType:
        throw new AgentComputerError("INVALID_ARGUMENT", `${quoted} is not a file path.`);
      case PLACE_EXIT.parentIsFile:
        throw new AgentComputerError("INVALID_ARGUMENT", `A parent of ${quoted} is a file, not a folder.`);
      default:
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The machine could not write ${quoted} (exit ${placed.exitCode}): ${text(placed.stderr) || "no message"}`,
          { retryable: false },
        );
    }
  }

  /** A transfer file, and its parts where bytes move in parts. */
  protected override removeLater(file: string, as: CommandUser = "bot"): void {
    if (!this.host.sdk.transfersInParts) {
      super.removeLater(file, as);
      return;
    }
    void this.runScript(
      removeFileAndParts(file),
      "remove-transfer",
      [],
      AbortSignal.timeout(30_000),
      "remove a transfer file",
      as,
    ).catch(() => {});
  }

  /**
   * Sets a new sandbox up for the display as a second user, as root
   * (SECOND_USER_SETUP): the bot's user loses the root rights the template
   * build gave it, and the display gets its places. A failure is
   * UNAVAILABLE: a sandbox half set up is not handed out.
   */
  async setUpSecondUser(context: OpContext): Promise<void> {
    const args = [this.host.options.user, this.workspacePath, e2bChromiumPolicy(this.workspacePath)];
    const done = await this.runCommandAs(
      "root",
      {
        argv: ["sh", "-c", SECOND_USER_SETUP, "second-user-setup", ...args],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
      },
      context,
      "set up the display's user",
    );
    if (done.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The sandbox could not be set up for the display's own user (exit ${done.exitCode}): ${text(done.stderr) || "no message"}`,
        { retryable: false },
      );
    }
  }

  /** The sandbox user behind each of the kit's users (e2b-display-user.ts). */
  private userOf(as: CommandUser): string {
    if (as === "root") return "root";
    return as === "display" ? E2B_DISPLAY_USER : this.host.options.user;
  }

  get sandboxId(): string {
    return this.sandbox.sandboxId;
  }

  /**
   * `https://<port>-<id>.<domain>` as the SDK's getHost builds it, or the
   * provider's `portUrl` mapping. A browser cannot send E2B's traffic-token
   * header, so screens rely on the gateway's own capability tokens.
   */
  protected async urlOfPort(port: number, _context: OpContext): Promise<string> {
    this.refuseSpent();
    if (this.host.options.portUrl) return this.host.options.portUrl(this.sandboxId, port);
    return `https://${this.sandbox.getHost(port)}`;
  }

  /**
   * Pauses the sandbox: processes and memory are kept, and reconnect
   * resumes it. A pause is a blocking memory snapshot (seconds per GB): one
   * that outlives the request goes on at the service, so a failed call is
   * followed by the sandbox's state until it says paused.
   */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.dropHolds();
    try {
      await withControlPlaneRetry(
        () =>
          this.host.sdk.Sandbox.pause(this.sandboxId, { ...this.host.connection(), signal: signalOf(context, "stop") }),
        {
          what: `pause ${this.ref}`,
          service: this.host.sdk.service,
          deadlineMs: this.host.options.controlPlaneDeadlineMs,
          signal: signalOf(context, "stop"),
        },
      );
    } catch (error) {
      if (AgentComputerError.is(error) && statusOfFailure(error) === 404) throw this.goneError();
      await this.untilPaused(error, signalOf(context, "stop"));
    }
    loggerOf(context).info("e2b machine stopped (paused)", { ref: this.ref });
  }

  /** After a pause call failed: the state until it says paused (or gone), else the call's error. */
  private async untilPaused(failure: unknown, signal: AbortSignal): Promise<void> {
    const until = Date.now() + this.host.options.pauseDeadlineMs;
    while (Date.now() < until) {
      const state = await this.state().catch(() => "unknown" as const);
      if (state === "paused") return;
      if (state === "gone") throw this.goneError();
      await abortableSleep(1_000, signal);
    }
    throw failure;
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    this.markSpent();
    // kill answers false for a sandbox already gone: destroying twice is fine.
    await withControlPlaneRetry(
      () =>
        this.host.sdk.Sandbox.kill(this.sandboxId, { ...this.host.connection(), signal: signalOf(context, "destroy") }),
      {
        what: `kill ${this.ref}`,
        service: this.host.sdk.service,
        deadlineMs: this.host.options.controlPlaneDeadlineMs,
        signal: signalOf(context, "destroy"),
      },
    );
    loggerOf(checkOpContext(ctx)).info("e2b machine destroyed", { ref: this.ref });
  }

  protected runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    return this.runCommandAs("bot", command, context, what);
  }

  /** envd runs a process as the user its Basic auth names (envd permissions/authenticate.go): the bot's, the display's or root. */
  protected override async runCommandAs(
    as: CommandUser,
    command: MachineCommand,
    context: OpContext,
    what: string,
  ): Promise<ExecResult> {
    this.refuseSpent();
    await this.refuseQuarantined();
    const commands = as === "bot" ? this.commands : { ...this.commands, headers: processHeaders(this.userOf(as)) };
    try {
      return await this.keptAlive(() =>
        runEnvdCommand(commands, { ...command, signal: signalOf(context, what) }, what),
      );
    } catch (error) {
      await this.refuseQuarantined();
      throw error;
    }
  }

  /**
   * Novita's rule: a command whose processes could not be confirmed killed
   * may still run, so the computer is paused and quarantined; reconnect
   * refuses it until recover. On E2B the failure is only reported.
   */
  /**
   * Quarantines the computer (refused from now on), then pauses it, with
   * the control plane's retries: a pause the service failed once (a 5xx:
   * the emulator's engine could not freeze the container on a loaded host)
   * left it running while the error said "paused". A pause that still
   * fails is named in the quarantine's reason.
   */
  private async killUnconfirmed(what: string): Promise<void> {
    if (!this.host.sdk.quarantineUnconfirmedKills) return;
    const reason = `the processes of a command (${what}) could not be confirmed killed`;
    await this.host.quarantine.add(this.ref, `${reason}, and it is paused`);
    const deadlineMs = Math.min(this.host.options.controlPlaneDeadlineMs, QUARANTINE_PAUSE_MS);
    const signal = AbortSignal.timeout(deadlineMs);
    try {
      await withControlPlaneRetry(
        () => this.host.sdk.Sandbox.pause(this.sandboxId, { ...this.host.connection(), signal }),
        { what: `pause ${this.ref}`, service: this.host.sdk.service, deadlineMs, signal },
      );
    } catch (error) {
      const why = AgentComputerError.is(error) ? error.message : String(error);
      await this.host.quarantine.add(this.ref, `${reason}, and its pause failed (${why}): it may still be running`);
    }
  }

  private async refuseQuarantined(): Promise<void> {
    if (!this.host.sdk.quarantineUnconfirmedKills) return;
    const reason = await this.host.quarantine.reasonOf(this.ref);
    if (reason !== undefined) throw quarantinedError(this.ref, reason);
  }

  /** A broken envd call: gone when the control plane no longer knows the sandbox, else UNAVAILABLE. */
  private async transportFailure(error: unknown, what: string): Promise<AgentComputerError> {
    if (AgentComputerError.is(error)) return error;
    const state = await this.state().catch(() => "unknown" as const);
    if (state === "gone") return this.goneError();
    if (state === "paused") {
      return new AgentComputerError("CONFLICT", `Cannot ${what}: ${this.ref} is paused; reconnect to resume it.`, {
        retryable: false,
        cause: error,
      });
    }
    const message = error instanceof Error ? error.message.replace(/\s+/g, " ").slice(0, 200) : String(error);
    return new AgentComputerError("UNAVAILABLE", `envd failed to ${what} in ${this.ref}: ${message}`, { cause: error });
  }

  private async state(): Promise<"running" | "paused" | "gone"> {
    try {
      const info = await this.host.sdk.Sandbox.getInfo(this.sandboxId, {
        ...this.host.connection(),
        signal: AbortSignal.timeout(10_000),
      });
      return info.state === "paused" ? "paused" : "running";
    } catch (error) {
      if (sdkStatus(error) === 404) return "gone";
      throw e2bFailure(error, `look up ${this.ref}`);
    }
  }

  goneError(): AgentComputerError {
    return new AgentComputerError(
      "PROVIDER_GONE",
      `The sandbox behind ${this.ref} no longer exists (killed or expired); provision a replacement and restore its home.`,
    );
  }
}

/** What every call on a quarantined computer throws. */
export function quarantinedError(ref: ProviderRef, reason: string): AgentComputerError {
  return new AgentComputerError(
    "CONFLICT",
    `${ref} is quarantined: ${reason}. It is not resumed until an explicit recover replaces it from its last checkpoint.`,
    { retryable: false, details: { quarantined: true } },
  );
}
