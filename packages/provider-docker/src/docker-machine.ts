import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { packHome, restoreHome } from "@agent-computer/checkpoint";
import {
  AgentComputerError,
  checkOpContext,
  DEFAULT_MAX_OUTPUT_BYTES,
  type DesktopOptions,
  type DesktopSession,
  type ExecRequest,
  type ExecResult,
  execRequestSchema,
  loggerOf,
  type Machine,
  type MachineFiles,
  normalizeHomePath,
  type OpContext,
  type ProviderRef,
  parseInput,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import { ExecHomeFiles, LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { z } from "zod";
import { giveHomeToComputer } from "./computer-home-owner.js";
import { runContainerCommand } from "./container-command.js";
import type { DockerMachineHost } from "./docker-machine-host.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

const readOptionsSchema = z.object({ maxBytes: z.number().int().positive().optional() });
const portSchema = z.number().int().min(1).max(65535);
const portOptionsSchema = z.object({ private: z.boolean() });

/**
 * One computer container. Commands and file calls go through the Engine
 * exec API as uid 1000; the home is a host folder bind-mounted at
 * `workspacePath`, so export reads it in place and import (while stopped)
 * replaces it in place: it is never copied in or out of the container.
 */
export class DockerMachine implements Machine {
  readonly ref: ProviderRef;
  readonly files: MachineFiles;
  private readonly container: Docker.Container;
  /** Desktops come from the shared Linux runtime, through this machine's exec. */
  private readonly desktops: LinuxDesktopRuntime;

  constructor(
    private readonly host: DockerMachineHost,
    readonly containerId: string,
    readonly workspacePath: string,
    /** The home's folder on the engine's host. */
    readonly homeDir: string,
    /** Active desktops allowed at once (0 = no cap), from the spec. */
    screenLimit = 0,
  ) {
    this.ref = `docker:${containerId}`;
    this.container = host.docker.getContainer(containerId);
    this.desktops = new LinuxDesktopRuntime(this, { screenLimit });
    this.files = {
      list: (path, ctx) => this.home(ctx, "list files", (home) => home.list(path)),
      read: (path, ctx, opts) => {
        const { maxBytes } = parseInput(readOptionsSchema, opts ?? {}, "read options");
        return this.home(ctx, "read a file", (home) => home.read(path, maxBytes));
      },
      write: (path, data, ctx) => {
        if (!(data instanceof Uint8Array) && typeof (data as Readable | undefined)?.pipe !== "function") {
          throw new AgentComputerError("INVALID_ARGUMENT", "Invalid file data: expected a Uint8Array or a Readable.");
        }
        return this.home(ctx, "write a file", (home) => home.write(path, data));
      },
      exportWorkspace: (ctx) => this.exportWorkspace(ctx),
      importWorkspace: (tar, ctx) => this.importWorkspace(tar, ctx),
    } satisfies MachineFiles;
  }

  async exec(req: ExecRequest, ctx?: OpContext): Promise<ExecResult> {
    const request = parseInput(execRequestSchema, req, "ExecRequest");
    const context = checkOpContext(ctx);
    throwIfDone(context, "command");
    const rel = normalizeHomePath(request.cwd ?? "");
    return this.run(
      {
        argv: request.argv ?? ["/bin/sh", "-c", request.shell as string],
        workingDir: rel === "" ? this.workspacePath : `${this.workspacePath}/${rel}`,
        env: request.env,
        stdin: request.stdin,
        timeoutMs: request.timeoutMs,
        maxOutputBytes: request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        onOutput: request.onOutput,
      },
      context,
      "run a command",
    );
  }

  async portUrl(port: number, opts: { private: boolean }, ctx?: OpContext): Promise<string> {
    parseInput(portSchema, port, "port");
    parseInput(portOptionsSchema, opts, "port options");
    const context = checkOpContext(ctx);
    throwIfDone(context, "port lookup");
    const info = await this.inspect(context, "look up a port");
    const binding = info.NetworkSettings?.Ports?.[`${port}/tcp`]?.[0];
    if (!binding?.HostPort) {
      const published = Object.keys(info.NetworkSettings?.Ports ?? {}).join(", ") || "none";
      throw new AgentComputerError(
        "UNSUPPORTED",
        `Port ${port} of ${this.ref} is not published (published: ${published}); list it in dockerProvider({ ports }) before provisioning.`,
      );
    }
    // Published on the host's loopback only, so `private` and public URLs are the same here.
    return `http://127.0.0.1:${binding.HostPort}`;
  }

  openDesktop(botId: string, ctx?: OpContext, opts?: DesktopOptions): Promise<DesktopSession> {
    return this.desktops.openDesktop(botId, ctx, opts);
  }

  quiesceDesktops(ctx?: OpContext): Promise<() => Promise<void>> {
    return this.desktops.quiesceDesktops(ctx);
  }

  async stop(ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "stop");
    try {
      await this.container.stop({ t: this.host.stopTimeoutSeconds, abortSignal: signalOf(context, "stop") });
    } catch (error) {
      const status = engineStatus(error);
      if (status === 304) return; // already stopped
      if (status === 404) throw this.goneError();
      throw engineFailure(error, `stop ${this.ref}`);
    }
    loggerOf(context).info("docker machine stopped", { ref: this.ref });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "destroy");
    try {
      await this.container.remove({ force: true, v: true, abortSignal: signalOf(context, "destroy") });
    } catch (error) {
      if (engineStatus(error) === 404) return; // destroying twice is fine
      throw engineFailure(error, `destroy ${this.ref}`);
    }
    loggerOf(context).info("docker machine destroyed; its home stays in the data folder", { ref: this.ref });
  }

  private async exportWorkspace(ctx?: OpContext): Promise<Readable> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "workspace export");
    await this.inspect(context, "export the workspace");
    await stat(this.homeDir).catch(() => {
      throw new AgentComputerError("NOT_FOUND", `The home folder of ${this.ref} is missing on the host.`);
    });
    const { tar } = packHome(this.homeDir);
    const signal = signalOf(context, "workspace export");
    const onAbort = () => tar.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    tar.once("close", () => signal.removeEventListener("abort", onAbort));
    return tar;
  }

  private async importWorkspace(tar: Readable, ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "workspace import");
    if (typeof tar?.pipe !== "function") {
      throw new AgentComputerError("INVALID_ARGUMENT", "Invalid workspace: expected a tar Readable.");
    }
    const info = await this.inspect(context, "import the workspace");
    if (info.State?.Running || info.State?.Restarting) {
      tar.destroy();
      throw new AgentComputerError(
        "CONFLICT",
        `The home is mounted into running machine ${this.ref}; stop it, import, then reconnect.`,
      );
    }
    const signal = signalOf(context, "workspace import");
    const onAbort = () => tar.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await restoreHome(tar, this.homeDir);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    if (signal.aborted) throw signal.reason;
    // restoreHome wrote as this process's user; the machine writes as uid 1000.
    await giveHomeToComputer(this.homeDir, true);
  }

  /** Runs a command, mapping a missing or stopped container to the contract's errors. */
  private async run(
    command: Omit<Parameters<typeof runContainerCommand>[1], "user" | "signal">,
    context: OpContext,
    what: string,
  ): Promise<ExecResult> {
    try {
      return await runContainerCommand(this.container, {
        ...command,
        user: this.host.user,
        signal: signalOf(context, what),
      });
    } catch (error) {
      if (AgentComputerError.is(error)) throw error;
      const status = engineStatus(error);
      if (status === 404) throw this.goneError();
      if (status === 409) throw this.stoppedError(what);
      throw engineFailure(error, what);
    }
  }

  /** The home's files through this call's context, so its abort and deadline reach the helper commands. */
  private async home<T>(
    ctx: OpContext | undefined,
    what: string,
    work: (home: ExecHomeFiles) => Promise<T>,
  ): Promise<T> {
    const context = checkOpContext(ctx);
    throwIfDone(context, what);
    return work(
      new ExecHomeFiles(this.workspacePath, (argv, options) =>
        this.run({ argv, workingDir: this.workspacePath, ...options }, context, what),
      ),
    );
  }

  private async inspect(context: OpContext, what: string): Promise<Docker.ContainerInspectInfo> {
    try {
      return await this.container.inspect({ abortSignal: signalOf(context, what) });
    } catch (error) {
      if (engineStatus(error) === 404) throw this.goneError();
      throw engineFailure(error, what);
    }
  }

  private stoppedError(what: string): AgentComputerError {
    return new AgentComputerError("CONFLICT", `Cannot ${what}: ${this.ref} is stopped; reconnect to resume it.`, {
      retryable: false,
    });
  }

  private goneError(): AgentComputerError {
    return new AgentComputerError(
      "PROVIDER_GONE",
      `The machine ${this.ref} no longer exists; provision a replacement and restore its home.`,
    );
  }
}
