import { randomBytes } from "node:crypto";
import { PassThrough, type Readable } from "node:stream";
import { HOME_TRANSFER_SCRIPTS, homeExportFailure, importHomeByScripts } from "@agent-computer/checkpoint";
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
import {
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import { BOX_GONE_STATES, BOX_READY_STATES, type BoxClient, type BoxCommandResult } from "./box-client.js";
import { type BoxCommandHost, runBoxCommand, STAGE_PART_BYTES, shellQuote, stageBytes } from "./box-command.js";
import type { ParsedBoxOptions } from "./box-provider-options.js";

/** What every machine of one provider shares. */
export interface BoxMachineHost {
  readonly client: BoxClient;
  readonly options: ParsedBoxOptions;
  readonly secrets: Set<string>;
}

/**
 * One Box. Commands run detached through the commands API with their
 * output polled (box-command.ts); the home is a folder inside the box,
 * moved in and out as one tar through the files API in parts; ports are
 * the service's private routes (`host <port> --private`). Use refreshes
 * the box's TTL; stop archives it (memory is not kept) and a command on an
 * archived box resumes it first (`noEnv` again).
 */
export class BoxMachine extends CommandChannelMachine implements BoxCommandHost {
  readonly ref: ProviderRef;
  private deleted = false;
  private lastRefresh = Date.now();
  private readonly routes = new Map<number, Promise<string>>();

  constructor(
    private readonly host: BoxMachineHost,
    readonly boxId: string,
    screenLimit = 0,
  ) {
    // Desktops come from the shared Linux runtime, through this machine's exec and port routes (docs/architecture.md §4).
    super(host.options.workspacePath, (machine) => new LinuxDesktopRuntime(machine, { screenLimit }));
    this.ref = `box:${boxId}`;
  }

  get client(): BoxClient {
    return this.host.client;
  }

  /** A synchronous command; on a box that is not running (archived by its TTL) the box is resumed and the call made again. */
  async sync(line: string, signal: AbortSignal, timeoutSeconds?: number): Promise<BoxCommandResult> {
    this.refuseDeleted();
    this.touch();
    try {
      return await this.client.command(this.boxId, { command: line, cwd: "/", timeoutSeconds }, signal);
    } catch (error) {
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      await resumeBox(this.host, this.boxId, signal);
      return this.client.command(this.boxId, { command: line, cwd: "/", timeoutSeconds }, signal);
    }
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseDeleted();
    const signal = signalOf(context, what);
    try {
      return await runBoxCommand(this, { ...command, signal });
    } catch (error) {
      if (AgentComputerError.is(error, "CONFLICT")) {
        await resumeBox(this.host, this.boxId, signal);
        return runBoxCommand(this, { ...command, signal });
      }
      throw error;
    }
  }

  /**
   * The box's private route of the port, from `host <port> --private` in
   * the box: a URL whose `_token` query admits its holder (kept by callers,
   * never logged). Routes are sticky, so one per port is kept.
   */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    this.refuseDeleted();
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
    this.refuseDeleted();
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
    this.deleted = true;
    loggerOf(checkOpContext(ctx)).info("box deleted", { ref: this.ref });
  }

  /**
   * The home as one GNU tar: checkpoint's export script writes it to a file
   * in the box, which is split into parts the files API reads (two ahead)
   * and streams on; the parts go once read.
   */
  protected async exportHome(context: OpContext): Promise<Readable> {
    this.refuseDeleted();
    const signal = signalOf(context, "workspace export");
    const file = transferFile();
    const written = await this.runCommand(
      {
        argv: [
          "sh",
          "-c",
          // The script ends in `exit`: a subshell, so the split into files-API parts follows it.
          `(\nexec >"$0" || exit 70\n${HOME_TRANSFER_SCRIPTS.exportHome}\n) || exit $?\nsplit -b ${STAGE_PART_BYTES} -d -a 6 -- "$0" "$0.part-" && rm -f -- "$0" && ls -- "$0".part-* | wc -l >&2`,
          file,
          this.workspacePath,
        ],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
      },
      context,
      "workspace export",
    );
    if (written.exitCode !== 0) {
      this.removeLater(file);
      throw homeExportFailure(written, this);
    }
    const parts = Number(text(written.stderr).split("\n").pop());
    const tar = new PassThrough();
    const read = (index: number) =>
      this.client.readFile(this.boxId, `${file}.part-${String(index).padStart(6, "0")}`, signal);
    void (async () => {
      const ahead: Promise<Buffer>[] = [];
      for (let i = 0; i < Math.min(2, parts); i++) ahead.push(read(i));
      for (let i = 0; i < parts; i++) {
        const bytes = await (ahead.shift() as Promise<Buffer>);
        if (i + 2 < parts) ahead.push(read(i + 2));
        for (const p of ahead) p.catch(() => {});
        if (tar.destroyed) return;
        if (!tar.write(bytes)) await new Promise((resolve) => tar.once("drain", resolve));
      }
      tar.end();
    })().catch((error: unknown) => tar.destroy(error as Error));
    tar.once("close", () => this.removeLater(file));
    return tar;
  }

  protected importHome(tar: Readable, context: OpContext): Promise<void> {
    return this.importInTurn(() => this.importNow(tar, context));
  }

  /**
   * Replaces the home whole with checkpoint's `importHomeByScripts`: the
   * checked archive goes through the files API in parts as a file beside
   * the home, which the box unpacks and swaps in.
   */
  private async importNow(tar: Readable, context: OpContext): Promise<void> {
    throwIfDone(context, "workspace import");
    this.refuseDeleted();
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    const file = transferFile();
    const run = (script: string, name: string, args: string[], on: AbortSignal) =>
      this.runCommand(
        { argv: ["sh", "-c", script, name, ...args], workingDir: "/", maxOutputBytes: 64 * 1024 },
        { signal: on },
        "workspace import",
      );
    try {
      const stats = await importHomeByScripts(tar, {
        workspacePath: this.workspacePath,
        ref: this.ref,
        machineName: "the box",
        signal,
        stage: async (archive, tag) => {
          await this.upload(archive, file, signal);
          return run(HOME_TRANSFER_SCRIPTS.stageHomeFromFile, "stage-home", [this.workspacePath, tag, file], signal);
        },
        run,
      });
      loggerOf(context).info("box home imported", { ref: this.ref, ...stats });
    } finally {
      stopWatching();
      this.removeLater(file);
    }
  }

  /** Streams `tar` into the box through the files API in parts (two writes in flight), then joins them. */
  private async upload(tar: Readable, file: string, signal: AbortSignal): Promise<void> {
    let index = 0;
    const inFlight = new Set<Promise<void>>();
    let failure: unknown;
    const send = async (bytes: Buffer) => {
      const part = `${file}.part-${String(index++).padStart(6, "0")}`;
      const write = this.client.writeFile(this.boxId, part, bytes, signal).catch((error: unknown) => {
        failure ??= error;
      });
      inFlight.add(write);
      void write.finally(() => inFlight.delete(write));
      if (inFlight.size >= 2) await Promise.race(inFlight);
      if (failure !== undefined) throw failure;
    };
    let pending: Buffer[] = [];
    let size = 0;
    for await (const chunk of tar) {
      const bytes = Buffer.from(chunk as Uint8Array);
      pending.push(bytes);
      size += bytes.length;
      while (size >= STAGE_PART_BYTES) {
        const all = Buffer.concat(pending);
        await send(all.subarray(0, STAGE_PART_BYTES));
        pending = [all.subarray(STAGE_PART_BYTES)];
        size = all.length - STAGE_PART_BYTES;
      }
    }
    if (size > 0 || index === 0) await send(Buffer.concat(pending));
    await Promise.all(inFlight);
    if (failure !== undefined) throw failure;
    const joined = await this.sync(
      `cat "$0".part-* > "$0" && rm -f "$0".part-*`.replaceAll("$0", shellQuote(file)),
      signal,
      300,
    );
    if (joined.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The box could not join the uploaded home: ${joined.stderr.slice(0, 300)}`,
      );
    }
  }

  /** Makes the home folder (provision does, before anything runs in it). */
  async makeHome(context: OpContext): Promise<void> {
    const made = await this.runCommand(
      { argv: ["mkdir", "-p", "--", this.workspacePath], workingDir: "/", maxOutputBytes: 4096 },
      context,
      "make the home",
    );
    if (made.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The box could not make its home ${this.workspacePath} (exit ${made.exitCode}): ${text(made.stderr) || "no message"}`,
        { retryable: false },
      );
    }
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

  /** Stages bytes at an absolute path in the box (files API, in parts when large). */
  stage(path: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    return stageBytes(this, path, bytes, signal);
  }

  /**
   * Refreshes the TTL at most once a refresh interval while the machine is
   * used (every command and poll counts), so an idle box archives after
   * its TTL and a busy one never does.
   */
  private touch(): void {
    const now = Date.now();
    const every =
      this.host.options.ttlRefreshMs ?? Math.min(900_000, Math.max(1_000, (this.host.options.ttlSeconds * 1000) / 4));
    if (now - this.lastRefresh < every) return;
    this.lastRefresh = now;
    void this.client
      .update(this.boxId, { ttlSeconds: this.host.options.ttlSeconds }, AbortSignal.timeout(30_000))
      .catch(() => {});
  }

  private removeLater(file: string): void {
    void this.sync(`rm -f -- ${shellQuote(file)} ${shellQuote(file)}.part-*`, AbortSignal.timeout(30_000), 30).catch(
      () => {},
    );
  }

  private refuseDeleted(): void {
    if (this.deleted) throw new AgentComputerError("PROVIDER_GONE", `${this.ref} was deleted.`);
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

/** A file outside the home for one transfer. */
function transferFile(): string {
  return `/tmp/.agent-computer-transfer-${randomBytes(6).toString("hex")}.tar`;
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8").trim().slice(0, 500);
}
