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
import {
  type CommandUser,
  HostedMachine,
  type SecondUserDisplay,
  stoppedUnderCommand,
  text,
} from "@agent-computer/provider-kit";
import WebSocket from "ws";
import { type BridgeUser, bridgeInitAs } from "./command-line-as.js";
import { type ExecBridgeHost, runBridgeCommand, SHELL_SUBPROTOCOL } from "./exec-bridge.js";
import { isRunning } from "./railway-answers.js";
import { botTransferFolderOf, RAILWAY_DISPLAY_OWNER, SETUP_FAILED, setupGuard } from "./railway-display-user.js";
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
  /** The setup check each command's root shell runs first (setupGuard); its inputs are fixed, so it is built once. */
  private readonly guard: string;

  constructor(
    private readonly service: RailwayServiceHost,
    readonly serviceId: string,
    screenLimit = 0,
    /** The display as a second user (railway-display-user.ts); unset, the display shares the bot's user. */
    private readonly display?: SecondUserDisplay,
  ) {
    super({
      workspacePath: service.homePath,
      machineName: "the service",
      logName: "railway",
      screenLimit,
      ...(display ? { displayUser: display } : {}),
    });
    this.ref = `railway:${serviceId}`;
    this.guard = display ? setupGuard(service.options.user, service.options.volumeMountPath, service.homePath) : "";
  }

  /**
   * The bridge as one of the machine's users: the computer's (the bot's),
   * the display's, or the instance's own (root under RAILWAY_RUN_UID=0).
   * Where the display is a second user, every command first makes sure
   * the deployment is set up for it (setupGuard).
   */
  private bridgeAs(as: CommandUser, wake = true): ExecBridgeHost {
    return {
      open: (signal, options) => this.openBridge(signal, wake && options?.wake !== false),
      line: (argv, env) => bridgeInitAs(this.userOf(as), argv, env, this.guard),
      failure: (error, what) => this.bridgeFailure(error, what),
    };
  }

  /** The user behind each of the kit's users. */
  private userOf(as: CommandUser): BridgeUser {
    if (as === "root") return "root";
    return (as === "display" ? RAILWAY_DISPLAY_OWNER : this.service.options.user) as BridgeUser;
  }

  protected runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    return this.runCommandAs("bot", command, context, what);
  }

  /**
   * Runs a command as the bot's user, or, where the display is a second
   * user, as the display's user or root. The bot's commands have the home
   * as HOME; the display's bring their own (the kit's secondUserDisplayEnv).
   */
  protected override async runCommandAs(
    as: CommandUser,
    command: MachineCommand,
    context: OpContext,
    what: string,
  ): Promise<ExecResult> {
    if (as !== "bot" && !this.display) return super.runCommandAs(as, command, context, what);
    this.refuseSpent();
    const signal = signalOf(context, what);
    const env = { ...(as === "bot" ? { HOME: this.workspacePath } : {}), LANG: "C.UTF-8", ...command.env };
    const done = await runBridgeCommand(this.bridgeAs(as), { ...command, env, signal }, what);
    this.refuseFailedSetup(done);
    return done;
  }

  /** A command the display's setup stopped (SETUP_FAILED): the machine cannot be used safely. */
  private refuseFailedSetup(done: ExecResult): void {
    if (!this.display || done.exitCode !== SETUP_FAILED.exit) return;
    const said = text(done.stderr);
    if (!said.startsWith(SETUP_FAILED.said)) return;
    throw new AgentComputerError("UNAVAILABLE", `${this.ref} could not be set up for the display's own user: ${said}`, {
      retryable: false,
    });
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
   * volume). Where the display shares the bot's user, the mount and the
   * home are given to the computer's user by the instance's own user
   * (root: the service runs with RAILWAY_RUN_UID=0, see the README); as a
   * non-root user this only makes the folder. Where the display is a
   * second user, root's setup makes the home and keeps the mount root's
   * (SECOND_USER_SETUP), before the bot's first command.
   */
  override async makeHome(context: OpContext): Promise<void> {
    const signal = signalOf(context, "make the home");
    const script = this.display
      ? "true"
      : `mkdir -p -- "$2" && if [ "$(id -u)" = 0 ]; then chown "$3" -- "$1" "$2"; fi`;
    const argv = ["sh", "-c", script, "make-home", this.service.options.volumeMountPath, this.workspacePath];
    const made = await runBridgeCommand(
      this.bridgeAs("root"),
      { argv: [...argv, this.service.options.user], workingDir: "/", maxOutputBytes: 64 * 1024, signal },
      "make the home",
    );
    if (made.exitCode !== 0) {
      const said = text(made.stderr) || "no message";
      throw new AgentComputerError(
        "UNAVAILABLE",
        this.display
          ? `The service could not be set up for the display's own user (exit ${made.exitCode}): ${said}`
          : `The service could not make its home ${this.workspacePath} (exit ${made.exitCode}): ${said}`,
        { retryable: false },
      );
    }
  }

  /** Where the mount is root's (the display a second user), the bot's transfer files go in its own folder on the volume. */
  protected override transferFile(suffix = ".tar"): string {
    const file = super.transferFile(suffix);
    if (!this.display) return file;
    return `${botTransferFolderOf(this.service.options.volumeMountPath)}/${file.slice(file.lastIndexOf("/") + 1)}`;
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
  protected async uploadFile(
    file: string,
    data: Readable,
    signal: AbortSignal,
    as: CommandUser = "bot",
  ): Promise<void> {
    const done = await runBridgeCommand(
      this.bridgeAs(as),
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
  protected async downloadFile(file: string, signal: AbortSignal, as: CommandUser = "bot"): Promise<Readable> {
    const out = new PassThrough();
    const stderr: Uint8Array[] = [];
    let socket: WebSocket | undefined;
    const host = this.bridgeAs(as);
    const paced: ExecBridgeHost = {
      ...host,
      open: async (on, options) => {
        const opened = await host.open(on, options);
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
  protected override removeLater(file: string, as: CommandUser = "bot"): void {
    void runBridgeCommand(
      this.bridgeAs(as, false),
      { argv: ["rm", "-f", "--", file], workingDir: "/", maxOutputBytes: 4096, signal: AbortSignal.timeout(30_000) },
      "remove a transfer file",
    ).catch(() => {});
  }

  goneError(): AgentComputerError {
    return new AgentComputerError("PROVIDER_GONE", `${this.ref} was deleted.`);
  }
}
