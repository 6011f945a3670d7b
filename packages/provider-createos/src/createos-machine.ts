import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
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
import { HostedMachine } from "@agent-computer/provider-kit";
import type { Sandbox } from "@nodeops-createos/sandbox";
import type { ParsedCreateosOptions } from "./createos-provider-options.js";
import { CREATEOS_GONE_STATES, CREATEOS_MOVING_STATES, type CreateosService } from "./createos-service.js";
import { runManagedCommand } from "./managed-command.js";
import { ManagedProcesses } from "./managed-processes.js";

/** What every machine of one provider shares. */
export interface CreateosMachineHost {
  readonly service: CreateosService;
  readonly options: ParsedCreateosOptions;
}

/** The computer image's user (packages/desktop-runtime/image/Dockerfile: uid 1000, home /home/computer). */
const COMPUTER_UID = 1000;
const COMPUTER_HOME = "/home/computer";

/**
 * Runs argv as the computer's user. Who the service's agent runs commands
 * as is not published (the SDK's tutorial writes to /root, so root is
 * likely); as root the command drops to uid 1000 (util-linux's setpriv),
 * as anyone else it runs as it is.
 */
const AS_COMPUTER = `if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=${COMPUTER_UID} --regid=${COMPUTER_UID} --init-groups -- "$@"; fi; exec "$@"`;

/**
 * One CreateOS sandbox (a Firecracker microVM), a HostedMachine of the
 * kit. Commands are managed processes (runManagedCommand: stdin, exit
 * codes, deadlines and cancellation, which plain `/exec` lacks); files
 * move through the files API as raw bytes; ports are the sandbox's public
 * ingress URL (the desktop gateway's own tokens still guard the screens).
 * Stop pauses the VM, its memory kept; reconnect resumes the same one.
 */
export class CreateosMachine extends HostedMachine {
  readonly ref: ProviderRef;
  private readonly processes: ManagedProcesses;
  /** Aborted by stop: the commands that were running when the VM paused end with it. */
  private pausing = new AbortController();

  constructor(
    private readonly host: CreateosMachineHost,
    readonly sandboxId: string,
    /** The ingress URL template (`<port>` in it), when the sandbox has ingress. */
    private readonly ingressTemplate: string | undefined,
    screenLimit = 0,
  ) {
    super({
      workspacePath: host.options.workspacePath,
      machineName: "the sandbox",
      logName: "createos",
      screenLimit,
    });
    this.ref = `createos:${sandboxId}`;
    this.processes = new ManagedProcesses(host.service.client.http, sandboxId);
  }

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseSpent();
    const signal = signalOf(context, what);
    return this.keptAlive(() =>
      runManagedCommand(
        {
          processes: this.processes,
          failure: (error, doing) => this.host.service.failure(error, doing),
          running: async (check) => (await this.host.service.get(this.sandboxId, check)).status === "running",
          paused: this.pausing.signal,
        },
        {
          ...command,
          signal,
          asUser: (argv) => ["sh", "-c", AS_COMPUTER, "as-computer", ...argv],
          baseEnv: { HOME: COMPUTER_HOME, USER: "computer", LOGNAME: "computer" },
        },
        what,
      ),
    );
  }

  /** The home's tar put whole at `file` (sandbox.js SandboxFiles.upload: raw bytes, a stream sent as it comes). */
  protected async uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    this.refuseSpent();
    const body = Readable.toWeb(data) as ReadableStream<Uint8Array>;
    try {
      await this.host.service.handle(this.sandboxId).files.upload(file, body, { signal, timeoutMs: 0 });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw this.host.service.failure(error, "upload the home");
    }
  }

  /**
   * The export read as a stream: the files API's GET as sandbox.js
   * SandboxFiles.download sends it, through the SDK's transport
   * (`requestRaw`), without its whole-body ArrayBuffer, so a large home is
   * never held in memory.
   */
  protected async downloadFile(file: string, signal: AbortSignal): Promise<Readable> {
    this.refuseSpent();
    const http = this.host.service.client.http;
    const path = `/v1/sandboxes/${encodeURIComponent(this.sandboxId)}/files`;
    try {
      const response = await http.requestRaw("GET", path, { query: { path: file }, signal, timeoutMs: 0 });
      if (!response.ok) await http.throwForResponse(response, "GET", path);
      if (!response.body) return Readable.from([]);
      return Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw this.host.service.failure(error, "download the home");
    }
  }

  /**
   * The port's public ingress URL (the template's `<port>` replaced, as
   * sandbox.js previewUrl and Go's ingress.go PreviewURL do). Anyone with
   * it reaches the port: the desktop gateway's tokens are what guard it.
   */
  protected async urlOfPort(port: number, _context: OpContext): Promise<string> {
    this.refuseSpent();
    if (!this.ingressTemplate) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `${this.ref} has no ingress URL template (its ingress is off, or the service knows no public domain for it), so its ports cannot be reached from outside; this provider reaches ports only through ingress.`,
      );
    }
    return this.ingressTemplate.split("<port>").join(String(port));
  }

  /** Pauses the VM, its memory and disk kept (sandbox.js pause), and waits until it is paused. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    this.dropHolds(); // a stopped machine is kept alive by nothing
    // Commands under way end now: their processes are frozen with the VM and run on after a resume.
    this.pausing.abort(
      new AgentComputerError(
        "UNAVAILABLE",
        `${this.ref} was stopped (paused) while the command ran; its processes are frozen with it and run on after reconnect.`,
        { retryable: false },
      ),
    );
    this.pausing = new AbortController();
    const signal = signalOf(context, "stop");
    try {
      let sandbox = await this.host.service.get(this.sandboxId, signal);
      if (CREATEOS_MOVING_STATES.has(sandbox.status) && sandbox.status !== "pausing") {
        sandbox = await waitForStatus(this.host, this.sandboxId, signal, (s) => s === "running" || s === "paused");
      }
      if (sandbox.status === "running") {
        await this.host.service
          .retried(() => sandbox.pause({ signal }), `pause ${this.ref}`, signal)
          .catch(async (error) => {
            // An answer lost on the way: the status says whether the pause took.
            const now = await this.host.service.get(this.sandboxId, signal);
            if (now.status !== "pausing" && now.status !== "paused") throw error;
          });
      }
      await waitForStatus(this.host, this.sandboxId, signal, (status) => status === "paused");
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a destroyed sandbox is fine
      throw error;
    }
    loggerOf(context).info("sandbox paused", { ref: this.ref });
  }

  /** Destroys the sandbox (sandbox.js destroy); one already gone is fine. */
  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    const signal = signalOf(context, "destroy");
    try {
      await this.host.service.retried(
        () => this.host.service.handle(this.sandboxId).destroy({ signal }),
        `destroy ${this.ref}`,
        signal,
      );
    } catch (error) {
      if (!AgentComputerError.is(error, "PROVIDER_GONE")) throw error;
    }
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("sandbox destroyed", { ref: this.ref });
  }

  goneError(): AgentComputerError {
    return new AgentComputerError("PROVIDER_GONE", `${this.ref} was destroyed.`);
  }
}

/** Waits until the sandbox's status passes `done`; one in a status it does not come back from is PROVIDER_GONE. */
export async function waitForStatus(
  host: CreateosMachineHost,
  sandboxId: string,
  signal: AbortSignal,
  done: (status: string) => boolean,
): Promise<Sandbox> {
  const until = Date.now() + host.options.startTimeoutMs;
  for (;;) {
    const sandbox = await host.service.get(sandboxId, signal);
    if (done(sandbox.status)) return sandbox;
    if (CREATEOS_GONE_STATES.has(sandbox.status)) {
      throw new AgentComputerError("PROVIDER_GONE", `createos:${sandboxId} is ${sandbox.status}.`, {
        details: { state: sandbox.status },
      });
    }
    if (Date.now() >= until) {
      throw new AgentComputerError("TIMEOUT", `createos:${sandboxId} stayed ${sandbox.status} past the start timeout.`);
    }
    if (signal.aborted) throw signal.reason;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Resumes a paused sandbox (sandbox.js resume) and waits until it runs; the same VM, its memory as it was. */
export async function resumeSandbox(
  host: CreateosMachineHost,
  sandboxId: string,
  signal: AbortSignal,
): Promise<Sandbox> {
  let sandbox = await host.service.get(sandboxId, signal);
  if (sandbox.status === "pausing") {
    sandbox = await waitForStatus(host, sandboxId, signal, (status) => status === "paused");
  }
  if (sandbox.status === "paused") {
    const paused = sandbox;
    await host.service.retried(() => paused.resume({ signal }), `resume createos:${sandboxId}`, signal);
  }
  return waitForStatus(host, sandboxId, signal, (status) => status === "running");
}
