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
  abortable,
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
  type MachineDesktops,
} from "@agent-computer/core/provider-utils";
import { type DesktopTransport, LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { giveHomeToComputer } from "./computer-home-owner.js";
import { runContainerCommand } from "./container-command.js";
import { removePairNetwork } from "./display-network.js";
import { type DisplayPlan, type DisplayStartHost, isRunning, startDisplayContainer } from "./display-start.js";
import type { DockerMachineHost } from "./docker-machine-host.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

export interface DockerMachineOptions {
  /** Active desktops allowed at once (0 = no cap), from the spec. */
  readonly screenLimit?: number;
  readonly desktopTransport?: DesktopTransport;
  /**
   * The container the computer's display stack runs in (`displayContainer`)
   * and the network it shares with the computer only, when it has one: both
   * made on the first desktop call (display-start.ts), with what `host` gives.
   */
  readonly display?: { readonly plan: DisplayPlan; readonly host: DisplayStartHost };
  /**
   * The computer has an egress policy: its display's container sits on the
   * provider's bridge, so nothing the bot names may start there (`launch`
   * is refused): an image application given a URL (ImageMagick's
   * `display`, say) would fetch it around the egress proxy.
   */
  readonly fenced?: boolean;
  /** Run once the computer and its display are gone (a fenced computer's credentials files). */
  readonly afterDestroy?: () => Promise<void>;
}

/** A computer's display container, driven like a machine of its own, and how it is made. */
interface MachineDisplay {
  readonly machine: DockerMachine;
  readonly plan: DisplayPlan;
  readonly host: DisplayStartHost;
}

/** The most a display container's start may take: engine calls only, no desktop yet. */
const DISPLAY_START_TIMEOUT_MS = 120_000;

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
  private readonly display?: MachineDisplay;
  /** The display container's start, once per machine object; undefined until a desktop call (or after one failed). */
  private displayStart?: Promise<void>;
  private readonly afterDestroy?: () => Promise<void>;

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
    super(workspacePath, (machine) => (machine as DockerMachine).desktopsOf(workspacePath, options));
    this.ref = `docker:${containerId}`;
    this.container = host.docker.getContainer(containerId);
    this.afterDestroy = options.afterDestroy;
    if (options.display) {
      const machine = new DockerMachine(host, options.display.plan.container, workspacePath, homeDir);
      this.display = { ...options.display, machine };
    }
  }

  /**
   * Starts the display's container again where it stopped (reconnect). One
   * that was never made stays so: the first desktop call makes it.
   */
  async resumeDisplay(signal: AbortSignal): Promise<void> {
    await this.display?.machine.container.start({ abortSignal: signal }).catch((error: unknown) => {
      const status = engineStatus(error);
      // Already running, or never made (or removed by hand: the first desktop call makes it again).
      if (status !== 304 && status !== 404) throw engineFailure(error, `resume the display of ${this.ref}`);
    });
  }

  /**
   * The desktops' runtime, over the machine their calls go to: this one on
   * a shared display; the display's container otherwise, started on the
   * first call that needs it, and a quiesce that finds it never started
   * has nothing to close (a checkpoint of a shell-only computer starts no
   * display).
   */
  private desktopsOf(workspacePath: string, options: DockerMachineOptions): MachineDesktops {
    const runtime = new LinuxDesktopRuntime(
      forwardingTo(workspacePath, (ctx, work) => this.onDesktopMachine(ctx, work)),
      {
        screenLimit: options.screenLimit ?? 0,
        transport: options.desktopTransport ?? "service",
        // Beside the display, only the image's desktop applications (desktop-runtime README, launchPrograms).
        launchPrograms: options.fenced ? false : options.display === undefined ? true : "applications",
      },
    );
    if (!options.display) return runtime;
    return {
      openDesktop: (botId, ctx, opts) => runtime.openDesktop(botId, ctx, opts),
      quiesceDesktops: async (ctx) => ((await this.displayRuns(ctx)) ? runtime.quiesceDesktops(ctx) : async () => {}),
    };
  }

  /**
   * Runs `work` on the machine desktop calls go to. A display container
   * removed behind this object's back (by hand, a prune) answers
   * PROVIDER_GONE: the next call makes it again, as a new object would (a
   * runtime keeps this one while the computer runs on).
   */
  private async onDesktopMachine<T>(ctx: OpContext | undefined, work: (machine: Machine) => Promise<T>): Promise<T> {
    const machine = await this.desktopMachine(ctx);
    const start = this.displayStart;
    try {
      return await work(machine);
    } catch (error) {
      if (machine !== this && this.displayStart === start && AgentComputerError.is(error, "PROVIDER_GONE"))
        this.displayStart = undefined;
      throw error;
    }
  }

  /** The machine desktop calls go to: the display's, started first when this object has not yet seen it run. */
  private async desktopMachine(ctx: OpContext | undefined): Promise<DockerMachine> {
    if (!this.display) return this;
    if (!this.displayStart) {
      const start = this.startDisplay(this.display);
      this.displayStart = start;
      // A failed start is tried again by the next call; every caller waiting on this one gets its error.
      start.catch(() => {
        if (this.displayStart === start) this.displayStart = undefined;
      });
    }
    // One caller's abort ends its own wait, not the start others share.
    await (ctx?.signal ? abortable(this.displayStart, ctx.signal) : this.displayStart);
    return this.display.machine;
  }

  private async startDisplay(display: MachineDisplay): Promise<void> {
    const signal = AbortSignal.timeout(DISPLAY_START_TIMEOUT_MS);
    const computer = await this.inspect({ signal }, "start the display");
    // A stopped computer gets no display started beside it: reconnect resumes both.
    if (!computer.State.Running) throw this.stoppedError("start the display");
    await startDisplayContainer(display.host, computer, display.plan, this, signal);
  }

  /** Whether the display may hold desktops: started by this object, or found running (another process started it). */
  private async displayRuns(ctx: OpContext | undefined): Promise<boolean> {
    if (!this.display) return true;
    if (this.displayStart)
      return this.displayStart.then(
        () => true,
        () => false,
      );
    return isRunning(this.display.machine.container, signalOf(ctx ?? {}, "look up the display"));
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
    // A display starting now is stopped with the computer, not started after it.
    await this.displayStart?.catch(() => {});
    // A display never started (or removed by hand) leaves nothing to stop.
    await this.display?.machine.stop(context).catch(unlessGone);
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
    await this.displayStart?.catch(() => {});
    try {
      await this.container.remove({ force: true, v: true, abortSignal: signalOf(context, "destroy") });
    } catch (error) {
      // Destroying twice is fine.
      if (engineStatus(error) !== 404) throw engineFailure(error, `destroy ${this.ref}`);
    }
    // The display after its computer: a crash in between leaves a display the next provision removes
    // (display-containers.ts), never a computer whose desktops point at nothing.
    // Either may never have been made (a computer that only ran shells): removing nothing is fine.
    await this.display?.machine.destroy(context);
    if (this.display) await removePairNetwork(this.host.docker, this.display.plan.network);
    await this.afterDestroy?.();
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
 * A target whose calls go to the machine `on` gives when they are made:
 * the display's, once its container runs. Both containers mount the home
 * at `workspacePath`.
 */
function forwardingTo(
  workspacePath: string,
  on: <T>(ctx: OpContext | undefined, work: (machine: Machine) => Promise<T>) => Promise<T>,
): Pick<Machine, "exec" | "workspacePath" | "portUrl"> {
  return {
    exec: (request, ctx) => on(ctx, (machine) => machine.exec(request, ctx)),
    workspacePath,
    portUrl: (port, options, ctx) =>
      on(ctx, async (machine) => {
        if (!machine.portUrl) throw new AgentComputerError("UNSUPPORTED", `${machine.ref} publishes no ports.`);
        return machine.portUrl(port, options, ctx);
      }),
  };
}
