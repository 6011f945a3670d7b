import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { HOME_TRANSFER_SCRIPTS, homeExportFailure, importHomeByScripts } from "@agent-computer/checkpoint";
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
  throwIfDone,
} from "@agent-computer/core";
import {
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type { ConnectionOpts } from "e2b";
import type { ComputerQuarantine } from "./computer-quarantine.js";
import { e2bFailure, sdkStatus, withControlPlaneRetry } from "./e2b-failure.js";
import type { ResolvedE2bProviderOptions } from "./e2b-provider-options.js";
import { type EnvdCommandHost, runEnvdCommand } from "./envd-command.js";
import { processHeaders, processRpcOf } from "./envd-process.js";
import { PLACE_EXIT, PLACE_UPLOAD } from "./place-upload-script.js";
import type { SandboxSdk } from "./sandbox-sdk.js";

/** What every machine of one provider shares. */
export interface E2bMachineHost {
  readonly sdk: SandboxSdk;
  readonly quarantine: ComputerQuarantine;
  readonly options: ResolvedE2bProviderOptions;
  /** The SDK's connection options (key, URLs, request timeout); never logged. */
  connection(): ConnectionOpts;
}

/**
 * One sandbox. Commands, file calls and the home's export and import go
 * through envd's process service as the template's user; stop pauses the
 * sandbox (processes and memory kept), destroy kills it.
 */
export class E2bMachine extends CommandChannelMachine {
  readonly ref: ProviderRef;
  private readonly commands: EnvdCommandHost;
  private spent = false;

  constructor(
    private readonly host: E2bMachineHost,
    readonly sandbox: InstanceType<SandboxSdk["Sandbox"]>,
    screenLimit = 0,
  ) {
    super(host.options.workspacePath, (machine) => new LinuxDesktopRuntime(machine, { screenLimit }));
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

  /** A name beside the home (on its filesystem, so the final move is a rename) for one upload. */
  private uploadPath(suffix: string): string {
    const parent = this.workspacePath.slice(0, this.workspacePath.lastIndexOf("/"));
    const base = this.workspacePath.slice(this.workspacePath.lastIndexOf("/") + 1);
    return `${parent}/.${base}.upload-${randomBytes(6).toString("hex")}${suffix}`;
  }

  /** Streams `data` to `path` (absolute) through envd's /files as the sandbox user. */
  private async upload(path: string, data: Uint8Array | Readable, signal: AbortSignal, what: string): Promise<void> {
    const body =
      data instanceof Uint8Array
        ? new Blob([data as Uint8Array<ArrayBuffer>])
        : (Readable.toWeb(data) as unknown as ReadableStream<Uint8Array>);
    try {
      await this.sandbox.files.write(path, body, { user: this.host.options.user, useOctetStream: true, signal });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw await this.transportFailure(error, what);
    }
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
    const staged = this.uploadPath(".file");
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

  /** Pauses the sandbox: processes and memory are kept, and reconnect resumes it. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
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
      if (AgentComputerError.is(error) && sdkStatus(error.cause) === 404) throw this.goneError();
      throw error;
    }
    loggerOf(context).info("e2b machine stopped (paused)", { ref: this.ref });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    this.spent = true;
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

  /** Makes the home folder, from / (a new sandbox has none yet, so exec's working directory cannot be it). */
  async makeHome(context: OpContext): Promise<void> {
    const result = await this.runCommand(
      { argv: ["mkdir", "-p", "--", this.workspacePath], workingDir: "/", maxOutputBytes: 4096 },
      context,
      "make the home",
    );
    if (result.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The sandbox could not make the home ${this.workspacePath} (exit ${result.exitCode}): ${text(result.stderr)}`,
        { retryable: false },
      );
    }
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseSpent();
    await this.refuseQuarantined();
    try {
      return await runEnvdCommand(this.commands, { ...command, signal: signalOf(context, what) }, what);
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
  private async killUnconfirmed(what: string): Promise<void> {
    if (!this.host.sdk.quarantineUnconfirmedKills) return;
    const reason = `the processes of a command (${what}) could not be confirmed killed`;
    await this.host.quarantine.add(this.ref, reason);
    await this.host.sdk.Sandbox.pause(this.sandboxId, {
      ...this.host.connection(),
      signal: AbortSignal.timeout(30_000),
    }).catch(() => {});
  }

  private async refuseQuarantined(): Promise<void> {
    if (!this.host.sdk.quarantineUnconfirmedKills) return;
    const reason = await this.host.quarantine.reasonOf(this.ref);
    if (reason !== undefined) throw quarantinedError(this.ref, reason);
  }

  /**
   * The home as one tar stream: tar writes it to a file beside the home,
   * which is downloaded through envd's /files (raw bytes, read with
   * backpressure) and removed when the reader is done.
   */
  protected async exportHome(context: OpContext): Promise<Readable> {
    this.refuseSpent();
    const signal = signalOf(context, "workspace export");
    const file = this.uploadPath(".tar");
    const removeFile = () =>
      this.runCommand(
        { argv: ["rm", "-f", "--", file], workingDir: "/", maxOutputBytes: 4096 },
        {},
        "remove the export",
      ).catch(() => {});
    const packed = await this.runCommand(
      {
        argv: ["sh", "-c", HOME_TRANSFER_SCRIPTS.exportHomeToFile, "export-home", this.workspacePath, file],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
      },
      context,
      "export the workspace",
    );
    if (packed.exitCode !== 0) {
      await removeFile();
      throw homeExportFailure(packed, this);
    }
    let stream: ReadableStream<Uint8Array>;
    try {
      stream = await this.sandbox.files.read(file, { format: "stream", user: this.host.options.user, signal });
    } catch (error) {
      await removeFile();
      if (signal.aborted) throw signal.reason;
      throw await this.transportFailure(error, "export the workspace");
    }
    const tar = Readable.fromWeb(stream as import("node:stream/web").ReadableStream<Uint8Array>);
    tar.once("close", () => void removeFile());
    return tar;
  }

  protected importHome(tar: Readable, context: OpContext): Promise<void> {
    return this.importInTurn(() => this.importNow(tar, context));
  }

  /**
   * Replaces the home whole with checkpoint's `importHomeByScripts`: the
   * checked archive goes through envd's `/files` as a file beside the home,
   * which the sandbox unpacks and swaps in.
   */
  private async importNow(tar: Readable, context: OpContext): Promise<void> {
    throwIfDone(context, "workspace import");
    this.refuseSpent();
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    const archive = this.uploadPath(".tar");
    const run = (script: string, name: string, args: string[], on: AbortSignal) =>
      this.runCommand(
        { argv: ["sh", "-c", script, name, ...args], workingDir: "/", maxOutputBytes: 64 * 1024 },
        { signal: on },
        "import the workspace",
      );
    try {
      const stats = await importHomeByScripts(tar, {
        workspacePath: this.workspacePath,
        ref: this.ref,
        machineName: "the sandbox",
        signal,
        ...(this.host.options.stagingDir ? { stagingRoot: this.host.options.stagingDir } : {}),
        stage: async (packed, tag) => {
          await this.upload(archive, packed, signal, "import the workspace");
          return run(HOME_TRANSFER_SCRIPTS.stageHomeFromFile, "stage-home", [this.workspacePath, tag, archive], signal);
        },
        run,
      });
      loggerOf(context).info("e2b home imported", { ref: this.ref, ...stats });
    } catch (error) {
      // stageHomeFromFile removes the upload; one that never reached the script goes here.
      await run('rm -f -- "$1"', "remove-upload", [archive], AbortSignal.timeout(10_000)).catch(() => {});
      throw error;
    } finally {
      stopWatching();
    }
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

  private refuseSpent(): void {
    if (this.spent) throw this.goneError();
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
    `${ref} is quarantined and paused: ${reason}. It is not resumed until an explicit recover replaces it from its last checkpoint.`,
    { retryable: false, details: { quarantined: true } },
  );
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8").trim().slice(0, 500);
}
