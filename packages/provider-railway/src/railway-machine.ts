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
import { HostedMachine, stoppedUnderCommand, text } from "@agent-computer/provider-kit";
import WebSocket from "ws";
import { commandLine, type ExecBridgeHost, runBridgeCommand, SHELL_SUBPROTOCOL } from "./exec-bridge.js";
import { isRunning } from "./railway-answers.js";
import type { RailwayServiceHost } from "./railway-service.js";

/**
 * One Railway computer: a service deployed from the computer image with a
 * volume mounted at `volumeMountPath`, the home a folder on it. Commands,
 * the home's transfer and the desktops go over the exec bridge into the
 * running instance; ports are the service's public domains (one per
 * port). Stop stops the deployment: the volume (and so the home and the
 * bots' browser profiles) is kept, memory and the container's own disk
 * are not; a command on a stopped computer deploys it again first.
 */
export class RailwayMachine extends HostedMachine {
  readonly ref: ProviderRef;
  private readonly domains = new Map<number, Promise<string>>();

  constructor(
    private readonly service: RailwayServiceHost,
    readonly serviceId: string,
    screenLimit = 0,
  ) {
    super({
      workspacePath: service.homePath,
      machineName: "the service",
      logName: "railway",
      screenLimit,
    });
    this.ref = `railway:${serviceId}`;
  }

  /** The bridge as the computer's user (commands, transfers, desktops). */
  private readonly asUser: ExecBridgeHost = {
    open: (signal, options) => this.openBridge(signal, options?.wake !== false),
    line: (argv) => this.service.lineAsUser(argv),
    failure: (error, what) => this.bridgeFailure(error, what),
  };

  /** The bridge as the instance's own user (root under RAILWAY_RUN_UID=0): only to give the volume to the computer's user. */
  private readonly asInstance: ExecBridgeHost = { ...this.asUser, line: commandLine };

  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseSpent();
    const signal = signalOf(context, what);
    const env = { HOME: this.workspacePath, LANG: "C.UTF-8", ...command.env };
    return runBridgeCommand(this.asUser, { ...command, env, signal }, what);
  }

  /** A shell token for the running instance (deployed again first when stopped), then the bridge opened with it. */
  private async openBridge(signal: AbortSignal, wake: boolean): Promise<WebSocket> {
    const instanceId = wake
      ? await this.service.runningInstance(this.serviceId, signal)
      : await this.service.currentInstance(this.serviceId, signal);
    const token = await this.service.shellToken(this.serviceId, instanceId, signal);
    const socket = new WebSocket(this.service.execUrl, [SHELL_SUBPROTOCOL, token]);
    return new Promise<WebSocket>((resolve, reject) => {
      const fail = (error: Error) => {
        socket.removeAllListeners();
        socket.terminate();
        reject(error);
      };
      socket.once("open", () => {
        socket.removeAllListeners();
        resolve(socket);
      });
      socket.once("unexpected-response", (_req, res) =>
        fail(new Error(`the exec bridge refused the connection (HTTP ${res.statusCode})`)),
      );
      socket.once("error", fail);
      signal.addEventListener("abort", () => fail(signal.reason), { once: true });
    });
  }

  /**
   * A bridge that failed: a deleted service is gone; a stopped one took the
   * command with it (not retried: it may have done part of its work);
   * otherwise UNAVAILABLE with the bridge's words.
   */
  private async bridgeFailure(error: unknown, what: string): Promise<AgentComputerError> {
    if (AgentComputerError.is(error)) return error;
    const now = await this.service
      .instance(this.serviceId, AbortSignal.timeout(30_000))
      .catch((failure) => (AgentComputerError.is(failure, "PROVIDER_GONE") ? ("gone" as const) : undefined));
    if (now === "gone") return this.goneError();
    if (now && !isRunning(now.latestDeployment)) {
      return stoppedUnderCommand(this.ref);
    }
    const said = this.service.client.redact(error instanceof Error ? error.message : String(error));
    return new AgentComputerError("UNAVAILABLE", `${this.ref} could not ${what}: ${said}.`, { retryable: true });
  }

  /**
   * Makes the home on the volume. Railway mounts a volume owned by root
   * (zero-intel/zero#60: a non-root image could not write its mounted
   * volume), so the mount and the home are given to the computer's user
   * first, by the instance's own user (root: the service runs with
   * RAILWAY_RUN_UID=0, see the README); as a non-root user this only makes
   * the folder.
   */
  override async makeHome(context: OpContext): Promise<void> {
    const signal = signalOf(context, "make the home");
    const script = `mkdir -p -- "$2" && if [ "$(id -u)" = 0 ]; then chown "$3" -- "$1" "$2"; fi`;
    const argv = ["sh", "-c", script, "make-home", this.service.options.volumeMountPath, this.workspacePath];
    const made = await runBridgeCommand(
      this.asInstance,
      { argv: [...argv, this.service.options.user], workingDir: "/", maxOutputBytes: 4096, signal },
      "make the home",
    );
    if (made.exitCode !== 0) {
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The service could not make its home ${this.workspacePath} (exit ${made.exitCode}): ${text(made.stderr) || "no message"}`,
        { retryable: false },
      );
    }
  }

  /** The service's public domain for the port (made once, then kept: Railway keeps a domain until it is deleted). */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    this.refuseSpent();
    const signal = signalOf(context, "port lookup");
    let domain = this.domains.get(port);
    if (!domain) {
      domain = this.service.domainOf(this.serviceId, port, signal);
      this.domains.set(port, domain);
      domain.catch(() => this.domains.delete(port));
    }
    return this.service.urlOfDomain(await domain);
  }

  /** Stops the running deployment (deploymentStop); the volume stays. */
  async stop(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "stop");
    this.refuseSpent();
    this.dropHolds();
    try {
      await this.service.stop(this.serviceId, signalOf(context, "stop"));
    } catch (error) {
      if (AgentComputerError.is(error, "PROVIDER_GONE")) return; // stopping a deleted service is fine
      throw error;
    }
    loggerOf(context).info("deployment stopped", { ref: this.ref });
  }

  /** Deletes the service and its volume. */
  async destroy(ctx?: OpContext): Promise<void> {
    const context = enterOperation(ctx, "destroy");
    await this.service.remove(this.serviceId, signalOf(context, "destroy"));
    this.markSpent();
    loggerOf(checkOpContext(ctx)).info("service and volume deleted", { ref: this.ref });
  }

  /** Writes the stream to `file` through `cat` over the bridge's stdin. */
  protected async uploadFile(file: string, data: Readable, signal: AbortSignal): Promise<void> {
    const done = await runBridgeCommand(
      this.asUser,
      { argv: ["sh", "-c", 'cat > "$1"', "upload", file], workingDir: "/", stdin: data, maxOutputBytes: 4096, signal },
      "upload a file",
    );
    if (done.exitCode !== 0) {
      throw new AgentComputerError("UNAVAILABLE", `${this.ref} could not write ${file}: ${text(done.stderr)}`);
    }
  }

  /**
   * Reads `file` as the stdout of `cat` over the bridge, handed on as it
   * arrives: while the reader is behind, the socket is paused, so the
   * bridge (and `cat`) wait instead of the export piling up in memory.
   */
  protected async downloadFile(file: string, signal: AbortSignal): Promise<Readable> {
    const out = new PassThrough();
    const stderr: Uint8Array[] = [];
    let socket: WebSocket | undefined;
    const paced: ExecBridgeHost = {
      ...this.asUser,
      open: async (on, options) => {
        const opened = await this.asUser.open(on, options);
        socket ??= opened;
        return opened;
      },
    };
    out.on("drain", () => socket?.resume());
    // A reader that lets go early ends the read: its `cat` is killed rather than left paused.
    const letGo = new AbortController();
    out.once("close", () => letGo.abort(new AgentComputerError("ABORTED", "The download's reader let go.")));
    void runBridgeCommand(
      paced,
      {
        argv: ["cat", "--", file],
        workingDir: "/",
        maxOutputBytes: 0,
        signal: AbortSignal.any([signal, letGo.signal]),
        onOutput: (stream, chunk) => {
          if (stream === "stderr") stderr.push(chunk);
          else if (!out.write(chunk)) socket?.pause();
        },
      },
      "download a file",
    ).then(
      (done) => {
        if (done.exitCode === 0) out.end();
        else
          out.destroy(
            new AgentComputerError("UNAVAILABLE", `${this.ref} could not read ${file}: ${text(Buffer.concat(stderr))}`),
          );
      },
      (error) => out.destroy(error),
    );
    return out;
  }

  /** Removes a transfer file without deploying a stopped service for it (a stop's volume keeps it until the next removal). */
  protected override removeLater(file: string): void {
    const quiet: ExecBridgeHost = { ...this.asUser, open: (signal) => this.openBridge(signal, false) };
    void runBridgeCommand(
      quiet,
      { argv: ["rm", "-f", "--", file], workingDir: "/", maxOutputBytes: 4096, signal: AbortSignal.timeout(30_000) },
      "remove a transfer file",
    ).catch(() => {});
  }

  goneError(): AgentComputerError {
    return new AgentComputerError("PROVIDER_GONE", `${this.ref} was deleted.`);
  }
}
