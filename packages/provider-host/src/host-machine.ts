import { lchown, lstat, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { packHome, restoreHome } from "@agent-computer/checkpoint";
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
import { CommandChannelMachine, type MachineCommand } from "@agent-computer/core/provider-utils";
import { SCREEN_GATEWAY_PORT } from "@agent-computer/desktop-runtime";
import { endProcessesOfComputer, HOST_COMPUTER_MARKER } from "./computer-processes.js";
import type { HostComputerRecord, HostComputerRecords } from "./host-computer-records.js";
import { hostDesktops } from "./host-desktops.js";
import type { HostUser } from "./host-provider-options.js";
import { runLocalCommand } from "./local-command.js";

/** What a host machine needs from its provider. */
export interface HostMachineParts {
  readonly records: HostComputerRecords;
  readonly user: HostUser | undefined;
  /** The computer's own variables (the provider's `env` option). */
  readonly env: Readonly<Record<string, string>>;
  /** The `PATH` its commands run with. */
  readonly path: string;
}

/**
 * A host computer: commands run on this machine as the app's user (or the
 * `user` the provider names) in the home folder, with the computer's
 * environment and never the app's; files through core's helpers over
 * those commands, as on every Linux computer; the home moves in and out
 * through the checkpoint codec. Nothing isolates it from the rest of the
 * machine (README.md).
 */
export class HostMachine extends CommandChannelMachine {
  readonly ref: ProviderRef;

  constructor(
    private readonly record: HostComputerRecord,
    private readonly parts: HostMachineParts,
  ) {
    super(
      record.homeDir,
      record.display === "private" ? (machine) => hostDesktops(machine, record.screenLimit) : undefined,
    );
    this.ref = `host:${record.id}`;
  }

  async stop(ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "stop");
    await this.assertKnown();
    const ended = await endProcessesOfComputer(this.record.id, this.parts.user);
    await this.forgetDesktops();
    this.record.status = "stopped";
    await this.parts.records.save(this.record);
    loggerOf(context).info("host computer stopped", { ref: this.ref, processesEnded: ended });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "destroy");
    if (!(await this.parts.records.load(this.record.id))) return;
    await endProcessesOfComputer(this.record.id, this.parts.user);
    await this.parts.records.remove(this.record);
    // The home is the machine's: the saved checkpoints are its persistence boundary.
    await rm(this.record.homeDir, { recursive: true, force: true });
    loggerOf(context).info("host computer destroyed", { ref: this.ref });
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    await this.assertRunning(what);
    return runLocalCommand({
      ...command,
      env: {
        PATH: this.parts.path,
        HOME: this.record.homeDir,
        LANG: "C.UTF-8",
        ...this.desktopEnv(),
        ...this.parts.env,
        ...command.env,
        [HOST_COMPUTER_MARKER]: this.record.id,
      },
      ...(this.parts.user ? { user: this.parts.user } : {}),
      signal: signalOf(context, what),
    });
  }

  /** Commands run on this host, so a port of the computer is a port here; its screen gateway has its own. */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    await this.assertRunning("reach a port");
    throwIfDone(context, "port lookup");
    const mapped = port === SCREEN_GATEWAY_PORT && this.record.gatewayPort ? this.record.gatewayPort : port;
    return `http://127.0.0.1:${mapped}`;
  }

  protected async exportHome(context: OpContext): Promise<Readable> {
    await this.assertRunning("export the home");
    throwIfDone(context, "home export");
    return packHome(this.record.homeDir).tar;
  }

  protected async importHome(tar: Readable, context: OpContext): Promise<void> {
    await this.assertRunning("import the home");
    await this.importInTurn(async () => {
      const signal = signalOf(context, "home import");
      const onAbort = () => tar.destroy(signal.reason as Error);
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        // Checked and staged before the old home goes: a refused archive leaves it as it was.
        await restoreHome(tar, this.record.homeDir);
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
      if (signal.aborted) throw signal.reason;
      if (this.parts.user) await giveTree(this.record.homeDir, this.parts.user);
    });
  }

  /** Where the desktop runtime keeps this computer's desktops, and how its screen gateway listens. */
  private desktopEnv(): Record<string, string> {
    if (this.record.display !== "private") return {};
    return {
      ...(this.record.desktopState ? { AGENT_COMPUTER_DESKTOP_STATE: this.record.desktopState } : {}),
      // Loopback only: a host computer's screens are reached through the app, never from the network.
      AGENT_COMPUTER_GATEWAY_SOURCES: "127.0.0.1",
      ...(this.record.gatewayPort ? { AGENT_COMPUTER_GATEWAY_PORT: String(this.record.gatewayPort) } : {}),
    };
  }

  /** After a stop every desktop process is gone: their records would only name dead ones. */
  private async forgetDesktops(): Promise<void> {
    const dir = this.record.desktopState;
    if (!dir) return;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      await rm(join(dir, name), { recursive: true, force: true });
    }
  }

  private async assertKnown(): Promise<HostComputerRecord> {
    const current = await this.parts.records.load(this.record.id);
    if (!current) {
      throw new AgentComputerError(
        "PROVIDER_GONE",
        `The host computer ${this.ref} was destroyed; provision a replacement and restore its home.`,
      );
    }
    this.record.status = current.status;
    return current;
  }

  private async assertRunning(what: string): Promise<void> {
    const current = await this.assertKnown();
    if (current.status !== "running") {
      throw new AgentComputerError(
        "CONFLICT",
        `Cannot ${what}: the host computer is stopped; reconnect to resume it.`,
        {
          retryable: false,
        },
      );
    }
  }
}

/** Gives every entry of `dir` (links themselves, never their targets) to `user`. */
async function giveTree(dir: string, user: HostUser): Promise<void> {
  await lchown(dir, user.uid, user.gid);
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    const info = await lstat(path);
    if (info.isDirectory()) await giveTree(path, user);
    else await lchown(path, user.uid, user.gid);
  }
}
