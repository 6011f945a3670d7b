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
  text,
  uploadInParts,
} from "@agent-computer/provider-kit";
import { BOX_GONE_STATES, BOX_READY_STATES, type BoxClient, type BoxCommandResult } from "./box-client.js";
import type { ParsedBoxOptions } from "./box-provider-options.js";

/** What every machine of one provider shares. */
export interface BoxMachineHost {
  readonly client: BoxClient;
  readonly options: ParsedBoxOptions;
  readonly secrets: Set<string>;
}

/**
 * One Box, a HostedMachine of the kit. Commands run detached through the
 * commands API with their output polled (the kit's runDetachedCommand over
 * this machine as its DetachedChannel); the home is a folder inside the
 * box, moved in and out as one tar through the files API in parts; ports
 * are the service's private routes (`host <port> --private`). Use refreshes the box's TTL, so an idle box archives after
 * its TTL and a busy one never does; stop archives it (memory is not kept)
 * and a command on an archived box resumes it first (`noEnv` again).
 */
export class BoxMachine extends HostedMachine implements DetachedChannel {
  readonly ref: ProviderRef;
  private readonly routes = new Map<number, Promise<string>>();

  constructor(
    private readonly host: BoxMachineHost,
    readonly boxId: string,
    screenLimit = 0,
  ) {
    super({
      workspacePath: host.options.workspacePath,
      machineName: "the box",
      logName: "box",
      screenLimit,
      keepAlive: {
        everyMs: host.options.ttlRefreshMs ?? Math.min(900_000, Math.max(1_000, (host.options.ttlSeconds * 1000) / 4)),
        refresh: () =>
          host.client
            .update(boxId, { ttlSeconds: host.options.ttlSeconds }, AbortSignal.timeout(30_000))
            .then(() => {}),
        freshAtStart: true,
      },
    });
    this.ref = `box:${boxId}`;
  }

  get client(): BoxClient {
    return this.host.client;
  }

  /** A synchronous command; on a box that is not running (archived by its TTL) the box is resumed and the call made again. */
  async sync(line: string, signal: AbortSignal, timeoutSeconds?: number): Promise<BoxCommandResult> {
    this.refuseSpent();
    this.touch();
    try {
      return await this.client.command(this.boxId, { command: line, cwd: "/", timeoutSeconds }, signal);
    } catch (error) {
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      await resumeBox(this.host, this.boxId, signal);
      return this.client.command(this.boxId, { command: line, cwd: "/", timeoutSeconds }, signal);
    }
  }

  detach(line: string, signal: AbortSignal): Promise<string> {
    return this.client.detach(this.boxId, { command: line, cwd: "/" }, signal);
  }

  async processState(id: string, signal: AbortSignal) {
    const status = await this.client.commandStatus(this.boxId, id, 2048, signal);
    return { running: status.status === "running", exitCode: status.exitCode };
  }

  writeFile(path: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    return this.client.writeFile(this.boxId, path, bytes, signal);
  }

  readFile(path: string, signal: AbortSignal): Promise<Buffer> {
    return this.client.readFile(this.boxId, path, signal);
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
        if (!AgentComputerError.is(error, "CONFLICT")) throw error;
        await resumeBox(this.host, this.boxId, signal);
        return runDetachedCommand(this, { ...command, signal });
      }
    });
  }

  /**
   * The box's private route of the port, from `host <port> --private` in
   * the box: a URL whose `_token` query admits its holder (kept by callers,
   * never logged). Routes are sticky, so one per port is kept.
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
    const answer = await this.sync(`host ${port} --private`, signal, 60);
    const url = answer.stdout.match(/https?:\/\/\S+/g)?.pop();
    if (answer.exitCode !== 0 || !url) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The box gave no private route for port ${port} (exit ${answer.exitCode}): ${this.client.redact(answer.stderr.trim().slice(0, 300)) || "no message"}`,
      );
    }
    const token = new URL(url).searchParams.get("_token");
    if (token) this.host.secrets.add(token);
    return url;
  }

  /** Archives the box; reconnect resumes it (a new VM, the same box id, the disk kept). */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    const signal = signalOf(context, "stop");
    try {
      let box = await this.client.get(this.boxId, signal);
      if (
        box.state === "provisioning" ||
        box.state === "init" ||
        box.state === "provisioned" ||
        box.state === "cloning"
      ) {
        // A box still starting (a resume under way) archives once it runs.
        await waitForState(
          this.host,
          this.boxId,
          signal,
          (state) => BOX_READY_STATES.has(state) || state === "archived",
        );
        box = await this.client.get(this.boxId, signal);
      }
      if (box.state !== "archived" && box.state !== "archiving") await this.client.stop(this.boxId, signal);
      await waitForState(this.host, this.boxId, signal, (state) => state === "archived");
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a deleted box is fine
      throw error;
    }
    loggerOf(context).info("box archived", { ref: this.ref });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    const signal = signalOf(context, "destroy");
    try {
      await this.client.delete(this.boxId, signal);
    } catch (error) {
      if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
    }
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("box deleted", { ref: this.ref });
  }

  /** The home's tar into the box through the files API, in parts joined in the box (the kit's uploadInParts). */
  protected uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    return uploadInParts(this, data, file, signal);
  }

  /** The export read through the files API, split in the box into parts read two ahead (the kit's downloadInParts). */
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
        `The box's setup failed (${done.timedOut ? "timed out" : `exit ${done.exitCode}`}): ${this.client.redact(text(done.stderr).slice(-400)) || "no message"}`,
        { retryable: false },
      );
    }
  }

  protected override removeLater(file: string): void {
    void this.sync(removeFileAndParts(file), AbortSignal.timeout(30_000), 30).catch(() => {});
  }
}

/** Waits until the box's state passes `done`; a box in a state it does not come back from is PROVIDER_GONE. */
export async function waitForState(
  host: BoxMachineHost,
  boxId: string,
  signal: AbortSignal,
  done: (state: string) => boolean,
): Promise<void> {
  const until = Date.now() + host.options.startTimeoutMs;
  for (;;) {
    const box = await host.client.get(boxId, signal);
    if (done(box.state)) return;
    if (BOX_GONE_STATES.has(box.state) || box.state === "error") {
      throw new AgentComputerError(
        "PROVIDER_GONE",
        `box:${boxId} is ${box.state}${box.errorReason ? ` (${box.errorReason})` : ""}.`,
        {
          details: { state: box.state },
        },
      );
    }
    if (Date.now() >= until) {
      throw new AgentComputerError("TIMEOUT", `box:${boxId} stayed ${box.state} past the start timeout.`);
    }
    if (signal.aborted) throw signal.reason;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Resumes an archived box (`noEnv` again) and waits until it is ready. */
export async function resumeBox(host: BoxMachineHost, boxId: string, signal: AbortSignal): Promise<void> {
  let box = await host.client.get(boxId, signal);
  if (box.state === "archiving") {
    await waitForState(host, boxId, signal, (state) => state === "archived");
    box = await host.client.get(boxId, signal);
  }
  if (!BOX_READY_STATES.has(box.state)) await host.client.resume(boxId, host.options.ttlSeconds, signal);
  await waitForState(host, boxId, signal, (state) => BOX_READY_STATES.has(state));
}
