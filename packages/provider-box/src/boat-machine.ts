import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import {
  AgentComputerError,
  checkOpContext,
  type ExecResult,
  loggerOf,
  type OpContext,
  type ProviderRef,
  signalOf,
} from "@agent-computer/core";
import { enterOperation, type MachineCommand } from "@agent-computer/core/provider-utils";
import {
  type DetachedChannel,
  downloadInParts,
  HostedMachine,
  removeFileAndParts,
  runDetachedCommand,
  stoppedUnderCommand,
  text,
  uploadInParts,
  type WakeOption,
} from "@agent-computer/provider-kit";
import type { BoatCommandResult } from "./boat-answers.js";
import { BOAT_GONE_STATES, BOAT_READY_STATES, BOAT_STARTING_STATES, type BoatClient } from "./boat-client.js";
import type { ParsedBoatOptions } from "./boat-provider-options.js";
import { SandboxLifetime } from "./sandbox-lifetime.js";

/** What every machine of one provider shares. */
export interface BoatMachineHost {
  readonly client: BoatClient;
  readonly options: ParsedBoatOptions;
  readonly secrets: Set<string>;
}

/**
 * One Boat sandbox, a HostedMachine of the kit. Commands run detached
 * through the commands API with their output polled (the kit's
 * runDetachedCommand over this machine as its DetachedChannel); the home
 * is a folder under the sandbox user's home (/home/user), moved in and
 * out as one tar through the files API in parts; ports are the service's
 * private routes (op:hostPort). Use keeps the auto-stop a window ahead
 * (SandboxLifetime), so an idle sandbox archives after the window and a
 * busy one never does; stop archives it (memory is not kept) and a
 * command on an archived sandbox resumes it first (`noEnv` again).
 */
export class BoatMachine extends HostedMachine implements DetachedChannel {
  readonly ref: ProviderRef;
  private readonly routes = new Map<number, Promise<string>>();
  private readonly lifetime: SandboxLifetime;

  constructor(
    private readonly host: BoatMachineHost,
    readonly sandboxId: string,
    screenLimit = 0,
    /** When the sandbox was created or resumed, if this process saw it (its auto-stop counts from then). */
    startedAt?: number,
  ) {
    const lifetime = new SandboxLifetime(host.client, sandboxId, host.options.ttlSeconds, startedAt);
    super({
      workspacePath: host.options.workspacePath,
      machineName: "the sandbox",
      logName: "boat",
      screenLimit,
      keepAlive: {
        everyMs: host.options.ttlRefreshMs ?? Math.min(900_000, Math.max(1_000, (host.options.ttlSeconds * 1000) / 4)),
        refresh: () => lifetime.refresh(AbortSignal.timeout(30_000)),
        freshAtStart: startedAt !== undefined,
      },
    });
    this.lifetime = lifetime;
    this.ref = `box:${sandboxId}`;
  }

  get client(): BoatClient {
    return this.host.client;
  }

  /**
   * A synchronous command; on a sandbox that is not running (archived by
   * its auto-stop) the sandbox is resumed and the call made again. Every
   * line the kit sends this way (polls, part joins, removals) may run twice
   * without harm, so a lost answer is asked again (`idempotent`).
   */
  async sync(
    line: string,
    signal: AbortSignal,
    timeoutSeconds?: number,
    options: WakeOption = {},
  ): Promise<BoatCommandResult> {
    this.refuseSpent();
    this.touch();
    const send = () => this.client.command(this.sandboxId, line, { timeoutSeconds, idempotent: true, signal });
    try {
      return await send();
    } catch (error) {
      if (!notRunning(error)) throw error;
      if (options.wake === false) throw stoppedUnderCommand(this.ref);
      await this.resume(signal);
      return send();
    }
  }

  /** The kit's start line claims its folder first, so a start sent twice runs once (`idempotent`). */
  async detach(line: string, signal: AbortSignal): Promise<string> {
    return String(await this.client.detach(this.sandboxId, line, { idempotent: true, signal }));
  }

  /** op:commandStatus; a `lost` process (the sandbox's agent restarted) is not running. */
  async processState(id: string, signal: AbortSignal) {
    const status = await this.client.commandStatus(this.sandboxId, Number(id), 1, signal);
    return { running: status.running && status.status !== "lost", exitCode: status.exitCode };
  }

  writeFile(path: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    return this.client.writeFile(this.sandboxId, path, bytes, signal);
  }

  readFile(path: string, signal: AbortSignal): Promise<Buffer> {
    return this.client.readFile(this.sandboxId, path, signal);
  }

  redact(text: string): string {
    return this.client.redact(text);
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseSpent();
    const signal = signalOf(context, what);
    return this.keptAlive(async () => {
      try {
        return await runDetachedCommand(this, { ...command, signal });
      } catch (error) {
        if (!notRunning(error)) throw error;
        await this.resume(signal);
        return runDetachedCommand(this, { ...command, signal });
      }
    });
  }

  /** Resumes the archived sandbox; its auto-stop counts from now. */
  private async resume(signal: AbortSignal): Promise<void> {
    if (await resumeSandbox(this.host, this.sandboxId, signal)) this.lifetime.started();
  }

  /**
   * The sandbox's private route of the port (op:hostPort, `public: false`):
   * a URL whose `_token` query admits its holder (kept by callers, never
   * logged). The service answers the same route for a port every time, so
   * one per port is kept.
   */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    this.refuseSpent();
    const signal = signalOf(context, "port lookup");
    let route = this.routes.get(port);
    if (!route) {
      route = this.askRoute(port, signal);
      this.routes.set(port, route);
      route.catch(() => this.routes.delete(port));
    }
    const url = await route;
    return this.host.options.routeUrl ? this.host.options.routeUrl(url) : url;
  }

  private async askRoute(port: number, signal: AbortSignal): Promise<string> {
    const url = await this.client.hostPort(this.sandboxId, port, signal);
    const token = new URL(url).searchParams.get("_token");
    if (token) this.host.secrets.add(token);
    return url;
  }

  /** Archives the sandbox (op:stop); reconnect resumes it (a fresh machine, the same id, the disk kept). */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    this.dropHolds(); // a stopped machine is kept alive by nothing
    const signal = signalOf(context, "stop");
    try {
      let sandbox = await this.client.get(this.sandboxId, signal);
      if (BOAT_STARTING_STATES.has(sandbox.state)) {
        // A sandbox still starting (a resume under way) archives once it runs.
        await waitForState(this.host, this.sandboxId, signal, (s) => BOAT_READY_STATES.has(s) || s === "archived");
        sandbox = await this.client.get(this.sandboxId, signal);
      }
      // Stopping an archived sandbox is refused (400 stop_failed), so only a running one is asked.
      if (sandbox.state !== "archived" && sandbox.state !== "archiving") {
        await this.client.stop(this.sandboxId, signal).catch(async (error) => {
          // An answer lost on the way: the state says whether the stop took.
          const now = await this.client.get(this.sandboxId, signal);
          if (now.state !== "archiving" && now.state !== "archived") throw error;
        });
      }
      await waitForState(this.host, this.sandboxId, signal, (state) => state === "archived");
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a deleted sandbox is fine
      throw error;
    }
    loggerOf(context).info("sandbox archived", { ref: this.ref });
  }

  /** op:deleteSandbox with its confirmation, followed until the deletion completes. */
  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    const signal = signalOf(context, "destroy");
    try {
      await this.client.delete(this.sandboxId, signal);
    } catch (error) {
      if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
    }
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("sandbox deleted", { ref: this.ref });
  }

  /** The home's tar into the sandbox through the files API, in parts joined there (the kit's uploadInParts). */
  protected uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    return uploadInParts(this, data, file, signal);
  }

  /** The export read through the files API, split in the sandbox into parts read two ahead (the kit's downloadInParts). */
  protected downloadFile(file: string, signal: AbortSignal): Promise<Readable> {
    return downloadInParts(this, file, signal);
  }

  /** A file outside the home for one transfer. */
  protected override transferFile(): string {
    return `/tmp/.agent-computer-transfer-${randomBytes(6).toString("hex")}.tar`;
  }

  goneError(): AgentComputerError {
    return new AgentComputerError("PROVIDER_GONE", `${this.ref} was deleted.`);
  }

  /** Runs a setup script (the tools a computer needs) from `/`; a failure is UNAVAILABLE with its last words. */
  async runSetup(setup: string, timeoutMs: number, ctx?: OpContext): Promise<void> {
    const done = await this.runCommand(
      { argv: ["sh", "-c", setup], workingDir: "/", timeoutMs, maxOutputBytes: 64 * 1024 },
      checkOpContext(ctx),
      "run the setup",
    );
    if (done.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The sandbox's setup failed (${done.timedOut ? "timed out" : `exit ${done.exitCode}`}): ${this.client.redact(text(done.stderr).slice(-400)) || "no message"}`,
        { retryable: false },
      );
    }
  }

  protected override removeLater(file: string): void {
    void this.sync(removeFileAndParts(file), AbortSignal.timeout(30_000), 30, { wake: false }).catch(() => {});
  }
}

/** Whether a command was refused because the sandbox does not run (op:command's 409 `sandbox_not_ready`; the legacy base's `machine_not_running`). */
function notRunning(error: unknown): boolean {
  const code = AgentComputerError.is(error, "CONFLICT") ? error.details?.code : undefined;
  return code === "sandbox_not_ready" || code === "machine_not_running" || code === "box_not_running";
}

/** Waits until the sandbox's state passes `done`; one in a state it does not come back from is PROVIDER_GONE. */
export async function waitForState(
  host: BoatMachineHost,
  sandboxId: string,
  signal: AbortSignal,
  done: (state: string) => boolean,
): Promise<void> {
  const until = Date.now() + host.options.startTimeoutMs;
  for (;;) {
    const sandbox = await host.client.get(sandboxId, signal);
    if (done(sandbox.state)) return;
    if (BOAT_GONE_STATES.has(sandbox.state) || sandbox.state === "error") {
      throw new AgentComputerError(
        "PROVIDER_GONE",
        `box:${sandboxId} is ${sandbox.state}${sandbox.error ? ` (${host.client.redact(sandbox.error)})` : ""}.`,
        { details: { state: sandbox.state } },
      );
    }
    if (Date.now() >= until) {
      throw new AgentComputerError("TIMEOUT", `box:${sandboxId} stayed ${sandbox.state} past the start timeout.`);
    }
    if (signal.aborted) throw signal.reason;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Resumes an archived sandbox (op:resume, `noEnv` again) and waits until
 * it is ready; answers whether this call resumed it (its auto-stop then
 * counts from now).
 */
export async function resumeSandbox(host: BoatMachineHost, sandboxId: string, signal: AbortSignal): Promise<boolean> {
  let sandbox = await host.client.get(sandboxId, signal);
  if (sandbox.state === "archiving") {
    await waitForState(host, sandboxId, signal, (state) => state === "archived");
    sandbox = await host.client.get(sandboxId, signal);
  }
  const resumed = sandbox.state === "archived";
  if (resumed) await host.client.resume(sandboxId, host.options.ttlSeconds, signal);
  await waitForState(host, sandboxId, signal, (state) => BOAT_READY_STATES.has(state));
  return resumed;
}
