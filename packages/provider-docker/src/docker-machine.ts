import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { packHome, restoreHome } from "@agent-computer/checkpoint";
import {
  AgentComputerError,
  type ExecResult,
  loggerOf,
  type Machine,
  type OpContext,
  type ProviderRef,
  signalOf,
} from "@agent-computer/core";
import {
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { type DesktopTransport, LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { giveHomeToComputer } from "./computer-home-owner.js";
import { runContainerCommand } from "./container-command.js";
import { removePairNetwork } from "./display-network.js";
import type { DockerMachineHost } from "./docker-machine-host.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

export interface DockerMachineOptions {
  /** Active desktops allowed at once (0 = no cap), from the spec. */
  readonly screenLimit?: number;
  readonly desktopTransport?: DesktopTransport;
  /** The container the computer's display stack runs in (`displayContainer`), by name or id, when it has one. */
  readonly displayContainerId?: string;
  /** The network the computer shares with its display container only (display-network.ts). */
  readonly displayNetwork?: string;
}

/**
 * One computer container. Commands and file calls go through the Engine
 * exec API as uid 1000; the home is a host folder bind-mounted at
 * `workspacePath`, so export reads it in place and import (while stopped)
 * replaces it in place: it is never copied in or out of the container.
 */
export class DockerMachine extends CommandChannelMachine {
  readonly ref: ProviderRef;
  private readonly container: Docker.Container;
  /**
   * The display's container, driven like a machine of its own (exec and
   * the gateway's port), never exposed: the bot's calls all go to this one.
   */
  private readonly display?: DockerMachine;
  private readonly displayNetwork?: string;

  constructor(
    private readonly host: DockerMachineHost,
    readonly containerId: string,
    workspacePath: string,
    /** The home's folder on the engine's host. */
    readonly homeDir: string,
    options: DockerMachineOptions = {},
  ) {
    // Desktops come from the shared Linux runtime: its resident service through the gateway's published port,
    // or exec; in the display's container when the computer has one.
    super(
      workspacePath,
      (machine) =>
        new LinuxDesktopRuntime(
          forwardingTo(() => (machine as DockerMachine).display ?? machine),
          {
            screenLimit: options.screenLimit ?? 0,
            transport: options.desktopTransport ?? "service",
            // Beside the display, only its own browser (desktop-runtime README, launchPrograms).
            launchPrograms: options.displayContainerId === undefined ? true : ["chromium"],
          },
        ),
    );
    this.ref = `docker:${containerId}`;
    this.container = host.docker.getContainer(containerId);
    if (options.displayContainerId) {
      this.display = new DockerMachine(host, options.displayContainerId, workspacePath, homeDir);
    }
    this.displayNetwork = options.displayNetwork;
  }

  /** Starts the display's container again where it stopped (reconnect); one that is gone leaves the computer without desktops. */
  async resumeDisplay(signal: AbortSignal): Promise<void> {
    await this.display?.container.start({ abortSignal: signal }).catch((error: unknown) => {
      const status = engineStatus(error);
      // Already running, or gone (its desktops then fail as gone).
      if (status !== 304 && status !== 404) throw engineFailure(error, `resume the display of ${this.ref}`);
    });
  }

  /** Ports listed in `dockerProvider({ ports })` are published on the host's loopback. */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
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

  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    // A display container someone removed leaves a computer without desktops, not one that cannot stop.
    await this.display?.stop(context).catch(unlessGone);
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
    const context = enterOperation(ctx, "destroy");
    try {
      await this.container.remove({ force: true, v: true, abortSignal: signalOf(context, "destroy") });
    } catch (error) {
      // Destroying twice is fine.
      if (engineStatus(error) !== 404) throw engineFailure(error, `destroy ${this.ref}`);
    }
    // The display after its computer: a crash in between leaves a display the next provision removes
    // (display-containers.ts), never a computer whose desktops point at nothing.
    await this.display?.destroy(context);
    if (this.displayNetwork) await removePairNetwork(this.host.docker, this.displayNetwork);
    loggerOf(context).info("docker machine destroyed; its home stays in the data folder", { ref: this.ref });
  }

  /** Reads the mounted home in place on this host. */
  protected async exportHome(context: OpContext): Promise<Readable> {
    await this.inspect(context, "export the workspace");
    await stat(this.homeDir).catch(() => {
      throw new AgentComputerError("NOT_FOUND", `The home folder of ${this.ref} is missing on the host.`);
    });
    const { tar } = packHome(this.homeDir);
    tar.once("close", destroyOnAbort(tar, signalOf(context, "workspace export")));
    return tar;
  }

  /** Restores into the mounted home in place, only while the container is stopped. */
  protected async importHome(tar: Readable, context: OpContext): Promise<void> {
    const info = await this.inspect(context, "import the workspace");
    if (info.State?.Running || info.State?.Restarting) {
      tar.destroy();
      throw new AgentComputerError(
        "CONFLICT",
        `The home is mounted into running machine ${this.ref}; stop it, import, then reconnect.`,
      );
    }
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    try {
      await restoreHome(tar, this.homeDir);
    } finally {
      stopWatching();
    }
    if (signal.aborted) throw signal.reason;
    // restoreHome wrote as this process's user; the machine writes as uid 1000.
    await giveHomeToComputer(this.homeDir, true);
  }

  /** Runs a command through the Engine exec API, mapping a missing or stopped container to the contract's errors. */
  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
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

const unlessGone = (error: unknown) => {
  if (!(AgentComputerError.is(error) && error.code === "PROVIDER_GONE")) throw error;
};

/**
 * A target whose calls go to the machine `pick` names when they are made:
 * the desktop runtime is built while the constructor runs, before the
 * display container's machine exists.
 */
function forwardingTo(pick: () => Machine): Pick<Machine, "exec" | "workspacePath" | "portUrl"> {
  return {
    exec: (request, ctx) => pick().exec(request, ctx),
    get workspacePath() {
      return pick().workspacePath;
    },
    portUrl: (port, options, ctx) => {
      const machine = pick();
      if (!machine.portUrl) throw new AgentComputerError("UNSUPPORTED", `${machine.ref} publishes no ports.`);
      return machine.portUrl(port, options, ctx);
    },
  };
}
