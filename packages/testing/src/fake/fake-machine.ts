import { rm } from "node:fs/promises";
import type { Readable } from "node:stream";
import { packHome, restoreHome } from "@agent-computer/checkpoint";
import type {
  DesktopSession,
  ExecResult,
  Machine,
  MachineFiles,
  ProviderCapabilities,
  ProviderRef,
} from "@agent-computer/core";
import {
  AgentComputerError,
  botIdSchema,
  checkOpContext,
  type DesktopOptions,
  desktopOptionsSchema,
  type ExecRequest,
  execRequestSchema,
  loggerOf,
  type OpContext,
  parseInput,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import { LocalHome, parseListOptions, parseReadOptions } from "@agent-computer/core/provider-utils";
import { z } from "zod";
import { FakeDesktop } from "./fake-desktop.js";
import type { FakeGateway } from "./fake-gateway.js";
import type { FakeMachineState } from "./fake-machine-state.js";
import { runLocalCommand } from "./run-local-command.js";

/** What a fake machine needs from its provider. */
export interface FakeMachineHost {
  readonly capabilities: ProviderCapabilities;
  readonly screen: { width: number; height: number };
  /** Serves every desktop's screens and terminals (one loopback server per provider). */
  readonly gateway?: FakeGateway;
  /** Writes the state to disk so another provider instance can reconnect. */
  save(state: FakeMachineState): Promise<void>;
  /** Forgets the machine for good. */
  remove(state: FakeMachineState): Promise<void>;
}

/**
 * A machine that runs commands with this host's /bin/sh in a private folder.
 * Not a security boundary: commands can reach the whole host.
 */
export class FakeMachine implements Machine {
  readonly ref: ProviderRef;
  readonly workspacePath: string;
  readonly files: MachineFiles;
  private readonly home: LocalHome;

  constructor(
    private readonly state: FakeMachineState,
    private readonly host: FakeMachineHost,
  ) {
    this.ref = `fake:${state.id}`;
    this.workspacePath = state.homeDir;
    this.home = new LocalHome(state.homeDir);
    this.files = {
      list: (path, ctx, opts) => {
        const checked = parseListOptions(opts);
        return this.whileRunning(ctx, "list files", () => this.home.list(path, checked));
      },
      read: (path, ctx, opts) => {
        const checked = parseReadOptions(opts);
        return this.whileRunning(ctx, "read a file", () => this.home.read(path, checked));
      },
      write: (path, data, ctx) =>
        this.whileRunning(ctx, "write a file", () => {
          if (!(data instanceof Uint8Array) && typeof (data as Readable)?.pipe !== "function") {
            throw new AgentComputerError("INVALID_ARGUMENT", "Invalid file data: expected a Uint8Array or a Readable.");
          }
          return this.home.write(path, data);
        }),
      exportWorkspace: (ctx) =>
        this.whileRunning(ctx, "export the workspace", async () => packHome(this.state.homeDir).tar),
      importWorkspace: (tar, ctx) => this.importWorkspace(tar, ctx),
    } satisfies MachineFiles;
    if (!host.capabilities.desktop) {
      // A machine without a desktop offers neither method.
      this.openDesktop = undefined;
      this.quiesceDesktops = undefined;
    }
  }

  async exec(req: ExecRequest, ctx?: OpContext): Promise<ExecResult> {
    const request = parseInput(execRequestSchema, req, "ExecRequest");
    return this.whileRunning(ctx, "run a command", async (context) => {
      const cwd = await this.home.resolve(request.cwd ?? "");
      const argv = request.argv ?? ["/bin/sh", "-c", request.shell as string];
      return runLocalCommand({
        argv,
        cwd,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: this.state.homeDir, LANG: "C.UTF-8", ...request.env },
        stdin: request.stdin,
        timeoutMs: request.timeoutMs,
        maxOutputBytes: request.maxOutputBytes,
        onOutput: request.onOutput,
        signal: signalOf(context, "command"),
        // A group outlives its command when the command left a background
        // child (a server); keep it so stop and destroy still kill it.
        track: (pgid, running) => {
          if (running || groupAlive(pgid)) this.state.processGroups.add(pgid);
          else this.state.processGroups.delete(pgid);
        },
      });
    });
  }

  openDesktop?: (botId: string, ctx?: OpContext, opts?: DesktopOptions) => Promise<DesktopSession> = async (
    botId,
    ctx,
    opts,
  ) => {
    const id = parseInput(botIdSchema, botId, "bot id");
    const options = parseInput(desktopOptionsSchema, opts ?? {}, "DesktopOptions");
    return this.whileRunning(ctx, "open a desktop", async () => {
      const open = this.state.desktops.get(id);
      if (open) return open;
      const limit = this.state.spec.screenLimit;
      if (limit > 0 && this.state.desktops.size >= limit) {
        throw new AgentComputerError(
          "MULTI_SCREEN_UNAVAILABLE",
          `This computer allows ${limit} active desktop(s) and all are in use; release one or wait. Shell and file tools still work.`,
        );
      }
      const used = new Set([...this.state.desktops.values()].map((d) => d.display));
      let slot = 100;
      while (used.has(`:${slot}`)) slot++;
      const screen = options.screen ?? this.host.screen;
      const desktop = new FakeDesktop(id, `:${slot}`, screen.width, screen.height, {
        assertUsable: () => {
          this.assertRunning("use the desktop");
          if (this.state.quiesced)
            throw new AgentComputerError("CONFLICT", "Desktops are paused for a workspace export; try again shortly.");
        },
        onRelease: () => this.state.desktops.delete(id),
        ...(this.host.gateway ? { gateway: this.host.gateway } : {}),
        // In the bot's folder where it has one (a Team computer), else the home.
        runLine: (line) =>
          this.exec({ argv: ["sh", "-c", 'cd "$1" 2>/dev/null; eval "$2"', "sh", `bots/${id}`, line] }),
      });
      this.state.desktops.set(id, desktop);
      return desktop;
    });
  };

  quiesceDesktops?: (ctx?: OpContext) => Promise<() => Promise<void>> = async (ctx) =>
    this.whileRunning(ctx, "pause desktops", async () => {
      this.state.quiesced = true;
      return async () => {
        this.state.quiesced = false;
      };
    });

  async portUrl(port: number, opts: { private: boolean }, ctx?: OpContext): Promise<string> {
    parseInput(z.number().int().min(1).max(65535), port, "port");
    parseInput(z.object({ private: z.boolean() }), opts, "port options");
    // Commands run on this host, so a port inside the machine is a port here.
    return this.whileRunning(ctx, "map a port", async () => `http://127.0.0.1:${port}`);
  }

  async stop(ctx?: OpContext): Promise<void> {
    throwIfDone(checkOpContext(ctx), "stop");
    if (this.state.status === "destroyed") throw this.goneError();
    if (!this.host.capabilities.stopKeepsMachine) return this.destroy(ctx);
    await this.halt();
    this.state.status = "stopped";
    await this.host.save(this.state);
    loggerOf(checkOpContext(ctx)).info("fake machine stopped", { ref: this.ref });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    throwIfDone(checkOpContext(ctx), "destroy");
    if (this.state.status === "destroyed") return;
    await this.halt();
    this.state.status = "destroyed";
    await this.host.remove(this.state);
    if (!this.host.capabilities.mountedHome) await rm(this.state.homeDir, { recursive: true, force: true });
  }

  private async importWorkspace(tar: Readable, ctx?: OpContext): Promise<void> {
    const context = checkOpContext(ctx);
    throwIfDone(context, "workspace import");
    if (typeof tar?.pipe !== "function")
      throw new AgentComputerError("INVALID_ARGUMENT", "Invalid workspace: expected a tar Readable.");
    if (this.state.status === "destroyed") throw this.goneError();
    if (this.host.capabilities.mountedHome && this.state.status === "running") {
      throw new AgentComputerError(
        "CONFLICT",
        "The home is mounted into this running machine; stop it, import, then reconnect.",
      );
    }
    if (!this.host.capabilities.mountedHome) this.assertRunning("import the workspace");
    const signal = signalOf(context, "workspace import");
    const onAbort = () => tar.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await restoreHome(tar, this.state.homeDir);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    if (signal.aborted) throw signal.reason;
  }

  private async halt(): Promise<void> {
    for (const pgid of this.state.processGroups) {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    this.state.processGroups.clear();
    for (const desktop of [...this.state.desktops.values()]) await desktop.release();
    this.state.quiesced = false;
  }

  private async whileRunning<T>(
    ctx: OpContext | undefined,
    what: string,
    work: (ctx: OpContext) => Promise<T>,
  ): Promise<T> {
    const context = checkOpContext(ctx);
    throwIfDone(context, what);
    this.assertRunning(what);
    return work(context);
  }

  private assertRunning(what: string): void {
    if (this.state.status === "destroyed") throw this.goneError();
    if (this.state.status === "stopped") {
      throw new AgentComputerError("CONFLICT", `Cannot ${what}: the machine is stopped; reconnect to resume it.`, {
        retryable: false,
      });
    }
  }

  private goneError(): AgentComputerError {
    return new AgentComputerError(
      "PROVIDER_GONE",
      `The machine ${this.ref} was destroyed; provision a replacement and restore its home.`,
    );
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
