import { PassThrough, type Readable } from "node:stream";
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
import { SCREEN_GATEWAY_PORT } from "@agent-computer/desktop-runtime";
import { abortableSleep, HostedMachine } from "@agent-computer/provider-kit";
import type { BoxdClient } from "./boxd-client.js";
import { type BoxdCommand, execFailure, MachineNotRunning, runBoxdCommand } from "./boxd-command.js";
import type { ParsedBoxdOptions } from "./boxd-provider-options.js";

/** What every machine of one provider shares. */
export interface BoxdMachineHost {
  readonly client: BoxdClient;
  readonly options: ParsedBoxdOptions;
}

/**
 * GetVmResponse.status values, by what the provider does about them. The
 * published subset gives `running`, `stopped`, `suspended` (discobox-ai/vm
 * fakeapi_test.go) and `failed`, `destroying` (its machine.go); the docs
 * call a paused machine `standby` (docs.boxd.sh, internal-cli "pause vs
 * reboot") and name hibernation (WakeVm). Values not listed are waited on.
 */
export const RUNNING_STATUSES = new Set(["running"]);
const SUSPENDED_STATUSES = new Set(["suspended", "standby", "paused"]);
const STOPPED_STATUSES = new Set(["stopped"]);
const HIBERNATED_STATUSES = new Set(["hibernated", "hibernating"]);
export const GONE_STATUSES = new Set(["failed", "destroying", "destroyed", "deleted"]);

/**
 * One boxd machine, a HostedMachine of the kit. Commands run on the Exec
 * stream (boxd-command.ts); the home is a folder below the boxd user's
 * home, moved in and out as one tar through Exec's stdin and stdout;
 * stop suspends the machine with its memory (SuspendVm) and a command or
 * reconnect resumes it; desktops come from the kit's Linux runtime, their
 * screen gateway on port 8000, the machine's public URL.
 */
export class BoxdMachine extends HostedMachine {
  readonly ref: ProviderRef;

  constructor(
    private readonly host: BoxdMachineHost,
    /** The machine's name: unique in its organisation, and what GetVm takes. */
    readonly name: string,
    screenLimit = 0,
  ) {
    super({ workspacePath: host.options.workspacePath, machineName: "the machine", logName: "boxd", screenLimit });
    this.ref = `boxd:${name}`;
  }

  get client(): BoxdClient {
    return this.host.client;
  }

  /**
   * Every command is told the screen gateway's port (gateway-files.ts
   * `gatewayPort`): the public URL reaches port 8000 only, so the gateway
   * listens there, started by whichever desktop command needs it first.
   */
  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    const env = { AGENT_COMPUTER_GATEWAY_PORT: String(PUBLIC_PORT), ...command.env };
    return this.run({ ...command, env, signal: signalOf(context, what) });
  }

  /**
   * Runs over Exec; a machine that was suspended or stopped is brought back
   * once and the command sent again, unless `wake` is false (cleanup that
   * lands after a stop must leave the machine stopped).
   */
  private async run(command: BoxdCommand, wake = true): Promise<ExecResult> {
    this.refuseSpent();
    try {
      return await runBoxdCommand(this.client, this.name, command);
    } catch (error) {
      if (!(error instanceof MachineNotRunning) || !wake) throw error;
      await bringUp(this.host, this.name, command.signal);
      return runBoxdCommand(this.client, this.name, command);
    }
  }

  /** The tar goes in as Exec's stdin to `cat`, so every byte arrives as sent. */
  protected async uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    const done = await this.run({
      argv: ["sh", "-c", 'cat > "$1"', "upload", file],
      workingDir: "/",
      stdin: data,
      maxOutputBytes: 64 * 1024,
      signal,
    });
    if (done.exitCode !== 0) throw execFailure(done, `write ${file}`, (t) => this.client.redact(t));
  }

  /** The file comes out as `cat`'s stdout on Exec, paused while the reader is behind. */
  protected async downloadFile(file: string, signal: AbortSignal): Promise<Readable> {
    const out = new PassThrough({ highWaterMark: 1024 * 1024 });
    void this.run({
      argv: ["cat", "--", file],
      workingDir: "/",
      maxOutputBytes: 64 * 1024,
      signal,
      stdoutSink: (chunk, resume) => {
        if (out.write(chunk)) return true;
        out.once("drain", resume);
        return false;
      },
    }).then(
      (done) =>
        done.exitCode === 0 ? out.end() : out.destroy(execFailure(done, `read ${file}`, (t) => this.client.redact(t))),
      (error: unknown) => out.destroy(error as Error),
    );
    return out;
  }

  /**
   * The screen gateway's port is the machine's public URL, which reaches
   * port 8000 (docs.boxd.sh control-plane, "Managing proxies":
   * `https://<name>.boxd.sh`, public, no authentication of the service's
   * own), where the gateway listens (runCommand). The URL admits anyone, so
   * a private URL is the gateway's to keep: it refuses every connection
   * without a screen or terminal token. Port 8000 itself is the gateway's,
   * and other ports need a named proxy, whose rpcs are not published in the
   * definition this package follows: both UNSUPPORTED (README).
   */
  protected async urlOfPort(port: number, _context: OpContext): Promise<string> {
    this.refuseSpent();
    if (port === PUBLIC_PORT) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `boxd's public URL reaches port ${PUBLIC_PORT} only, and the screen gateway listens there: a computer's own server cannot be offered on it.`,
      );
    }
    if (port !== SCREEN_GATEWAY_PORT) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `boxd serves only port ${PUBLIC_PORT} on a machine's public URL (the screen gateway's); port ${port} would need a proxy, which this provider cannot make.`,
      );
    }
    return this.host.options.publicUrl?.(this.name) ?? `https://${this.name}.boxd.sh`;
  }

  /** Suspends the machine with its memory (SuspendVm): its programs continue when it resumes. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    this.dropHolds();
    const signal = signalOf(context, "stop");
    try {
      const vm = await this.client.get(this.name, signal);
      if (RUNNING_STATUSES.has(vm.status)) {
        await this.client
          .call("SuspendVm", { vm_id: this.name }, `suspend ${this.name}`, signal)
          .catch(async (error) => {
            // An answer lost on the way, or a suspend already done: the status says.
            const now = await this.client.get(this.name, signal);
            if (!SUSPENDED_STATUSES.has(now.status)) throw error;
          });
      }
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a destroyed machine is fine
      throw error;
    }
    loggerOf(context).info("machine suspended", { ref: this.ref });
  }

  /** Runs the setup script (the computer's tools) from `/`; a failure or timeout is UNAVAILABLE with its stderr's end. */
  async runSetup(setup: string, timeoutMs: number, ctx?: OpContext): Promise<void> {
    const done = await this.runCommand(
      { argv: ["sh", "-c", setup], workingDir: "/", timeoutMs, maxOutputBytes: 64 * 1024 },
      checkOpContext(ctx),
      "run the setup",
    );
    if (done.exitCode === 0) return;
    const said = this.client.redact(Buffer.from(done.stderr).toString("utf8").trim().slice(-400));
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The machine's setup failed (${done.timedOut ? "timed out" : `exit ${done.exitCode}`}): ${said || "no message"}`,
      { retryable: false },
    );
  }

  /** DestroyVm; a machine already gone is destroyed. */
  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    const signal = signalOf(context, "destroy");
    try {
      await this.client.call("DestroyVm", { vm_id: this.name }, `destroy ${this.name}`, signal);
    } catch (error) {
      if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
    }
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("machine destroyed", { ref: this.ref });
  }

  /** Removes a transfer file, best effort, never waking a machine stopped meanwhile. */
  protected override removeLater(file: string): void {
    void this.run(
      { argv: ["rm", "-f", "--", file], workingDir: "/", maxOutputBytes: 4096, signal: AbortSignal.timeout(30_000) },
      false,
    ).catch(() => {});
  }

  goneError(): AgentComputerError {
    return new AgentComputerError("PROVIDER_GONE", `${this.ref} was destroyed; provision a new computer.`);
  }
}

/** The port a machine's default public URL reaches. */
export const PUBLIC_PORT = 8000;

/**
 * Brings the machine to `running`: a suspended one is resumed (memory
 * kept), a stopped one started, a hibernated one woken; then waits until
 * GetVm says running. A machine in a status it does not come back from is
 * PROVIDER_GONE. Answers whether a call was made.
 */
export async function bringUp(host: BoxdMachineHost, name: string, signal: AbortSignal): Promise<boolean> {
  const until = Date.now() + host.options.startTimeoutMs;
  let asked = false;
  for (;;) {
    const vm = await host.client.get(name, signal);
    if (RUNNING_STATUSES.has(vm.status)) return asked;
    if (GONE_STATUSES.has(vm.status)) {
      throw new AgentComputerError("PROVIDER_GONE", `boxd:${name} is ${vm.status}.`, {
        details: { status: vm.status },
      });
    }
    const rpc = SUSPENDED_STATUSES.has(vm.status)
      ? "ResumeVm"
      : STOPPED_STATUSES.has(vm.status)
        ? "StartVm"
        : HIBERNATED_STATUSES.has(vm.status)
          ? "WakeVm"
          : undefined;
    if (rpc && !asked) {
      asked = true;
      await host.client.call(rpc, { vm_id: name }, `bring ${name} back (${vm.status})`, signal).catch((error) => {
        // Another caller brought it up first: the next look says so.
        if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      });
      continue;
    }
    if (Date.now() >= until) {
      throw new AgentComputerError("TIMEOUT", `boxd:${name} stayed ${vm.status} past the start timeout.`);
    }
    await abortableSleep(250, signal);
  }
}
