import { randomBytes } from "node:crypto";
import { lchown, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  checkHomeArchive,
  HOME_TRANSFER_EXIT,
  HOME_TRANSFER_SCRIPTS,
  homeExportFailure,
  packHome,
  restoreHome,
} from "@agent-computer/checkpoint";
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
  abortable,
  CommandChannelMachine,
  destroyOnAbort,
  enterOperation,
  type MachineCommand,
} from "@agent-computer/core/provider-utils";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import type { V1Pod } from "@kubernetes/client-node";
import { COMPUTER_GID, COMPUTER_UID } from "./computer-pod-manifest.js";
import { apiStatus, kubernetesApiFailure } from "./kubernetes-api-failure.js";
import type { KubernetesMachineHost } from "./kubernetes-machine-host.js";
import type { PodAddress } from "./pod-address.js";
import { runPodCommand, startPodCommand } from "./pod-command.js";
import type { PodCommandHost } from "./pod-command-host.js";

/** Output of a home export held here before its exec connection pauses. */
const EXPORT_BUFFER_BYTES = 4 * 1024 * 1024;

/** Whether a pod read from the API is still a machine: not deleted, not being deleted, not finished or evicted. */
export function podIsAlive(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const phase = pod.status?.phase;
  return phase !== "Failed" && phase !== "Succeeded";
}

/**
 * One computer pod. Commands, file calls and the home's export and import
 * go through `pods/exec` as the pod's user (uid 1000); the home is a folder
 * inside the pod, copied in and out as one tar stream, unless the pod
 * mounts it from the home claim (then it is never copied, as on local
 * Docker). The pod itself is disposable: stop deletes it.
 */
export class KubernetesMachine extends CommandChannelMachine {
  readonly ref: ProviderRef;
  private readonly pod: PodAddress;
  private readonly commandHost: PodCommandHost;
  /** Set by stop/destroy: the pod is deleted or on its way out, so the handle is spent. */
  private deleted = false;
  /** The display container, driven like a machine of its own (exec and the gateway's port), never exposed. */
  private readonly display?: KubernetesMachine;
  /** Imports into one pod run one after another: they share the staging names beside the home. */

  constructor(
    private readonly host: KubernetesMachineHost,
    readonly podName: string,
    workspacePath: string,
    /** Active desktops allowed at once (0 = no cap), from the spec. */
    screenLimit = 0,
    /**
     * Set when the pod mounts its home from the home claim; `localHomeDir`
     * is that home as this process sees it, when it mounts the claim too.
     */
    private readonly mount?: { localHomeDir?: string },
    /**
     * The pod's display container when the display runs apart
     * (display-container-manifest.ts); `container`: the one this object's
     * commands run in, the bot's unless set; `fenced`: the pod has an
     * egress policy, so nothing the bot names starts beside the display
     * (`launch` is refused: an image application given a URL would fetch
     * it from the display's container, as on Docker).
     */
    containers: { display?: string; container?: string; fenced?: boolean } = {},
  ) {
    // Desktops come from the shared Linux runtime, through the exec of the container the display runs in.
    // (Made during super(), before this class's fields: the display's machine is looked up per call.)
    super(workspacePath, (machine) =>
      (machine as KubernetesMachine).desktops(
        workspacePath,
        screenLimit,
        containers.display !== undefined,
        containers.fenced === true,
      ),
    );
    this.ref = `kubernetes:${host.namespace}/${podName}`;
    this.pod = { namespace: host.namespace, name: podName, container: containers.container ?? host.containerName };
    if (containers.display) {
      this.display = new KubernetesMachine(host, podName, workspacePath, 0, mount, { container: containers.display });
    }
    this.commandHost = {
      kubeConfig: host.kubeConfig,
      pod: this.pod,
      execProtocol: () => host.execProtocol(podName),
      podAlive: () => this.podAlive(),
      goneError: () => this.goneError(),
    };
  }

  /**
   * Desktops over the display's container when it has one: only the
   * image's desktop applications start there (desktop-runtime README,
   * launchPrograms), as beside Docker's display container.
   */
  private desktops(workspacePath: string, screenLimit: number, apart: boolean, fenced: boolean): LinuxDesktopRuntime {
    if (!apart) return new LinuxDesktopRuntime(this, { screenLimit });
    const display = () => this.display as KubernetesMachine;
    return new LinuxDesktopRuntime(
      {
        workspacePath,
        exec: (request, ctx) => display().exec(request, ctx),
        portUrl: (port, options, ctx) => display().portUrl(port, options, ctx),
      },
      { screenLimit, launchPrograms: fenced ? false : "applications" },
    );
  }

  /**
   * `http://<pod IP>:<port>`: reachable from inside the cluster (the API,
   * the worker, the screen proxy), which is where this provider runs. Pod
   * IPs are cluster-private, so private and public URLs are the same here.
   */
  protected async urlOfPort(port: number, context: OpContext): Promise<string> {
    const pod = await this.read(context, "look up the pod's IP");
    const ip = pod.status?.podIP;
    if (!ip) throw new AgentComputerError("UNAVAILABLE", `${this.ref} has no pod IP yet; try again shortly.`);
    return `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
  }

  /** Deletes the pod: pods are not kept, the saved home is what persists (reconnect then gives "gone"). */
  async stop(ctx?: OpContext): Promise<void> {
    this.display?.markDeleted();
    await this.delete(ctx, "stop", this.host.terminationGracePeriodSeconds);
    loggerOf(checkOpContext(ctx)).info("kubernetes machine stopped (pod deleted)", { ref: this.ref });
  }

  async destroy(ctx?: OpContext): Promise<void> {
    this.display?.markDeleted();
    await this.delete(ctx, "destroy", 0);
    loggerOf(checkOpContext(ctx)).info("kubernetes machine destroyed", { ref: this.ref });
  }

  private async delete(ctx: OpContext | undefined, what: string, gracePeriodSeconds: number): Promise<void> {
    const context = enterOperation(ctx, what);
    this.deleted = true;
    try {
      await abortable(
        this.host.core.deleteNamespacedPod({ name: this.podName, namespace: this.host.namespace, gracePeriodSeconds }),
        signalOf(context, what),
      );
    } catch (error) {
      if (apiStatus(error) === 404) return; // already gone: stopping or destroying twice is fine
      throw kubernetesApiFailure(error, `${what} ${this.ref}`, this.host.namespace);
    }
  }

  /**
   * The home as one GNU tar stream: of a mounted home read where this
   * process sees the claim (as on local Docker), else from the pod with
   * backpressure through the exec connection.
   */
  protected async exportHome(context: OpContext): Promise<Readable> {
    const local = this.mount?.localHomeDir;
    if (local) {
      await stat(local).catch(() => {
        throw new AgentComputerError("NOT_FOUND", `The home ${local} of ${this.ref} is missing in the home claim.`);
      });
      return packHome(local).tar;
    }
    this.refuseDeleted();
    const signal = signalOf(context, "workspace export");
    let resumeOutput: (() => void) | undefined;
    let finished = false;
    let abandoned = false;
    // Room for a few MiB of output before the connection pauses: at the
    // default 16 KiB nearly every websocket message paused and resumed it.
    const tar = new Readable({ highWaterMark: EXPORT_BUFFER_BYTES, read: () => resumeOutput?.() });
    const stderr: Buffer[] = [];
    const started = await startPodCommand(this.commandHost, {
      argv: ["sh", "-c", HOME_TRANSFER_SCRIPTS.exportHome, "export-home", this.workspacePath],
      workingDir: "/",
      maxOutputBytes: 64 * 1024,
      onOutput: (name, chunk) => {
        if (name === "stderr") stderr.push(Buffer.from(chunk));
      },
      stdoutSink: (chunk, resume) => {
        resumeOutput = resume;
        return abandoned || tar.push(chunk);
      },
      signal,
    });
    // A reader that gives up early must not leave tar running in the pod, nor the exec's
    // output held back: its end (the status after the kill) comes behind that output, and a
    // Docker-backed node finishes no exec in the container while one's output waits unread.
    tar.once("close", () => {
      if (finished) return;
      abandoned = true;
      resumeOutput?.();
      void started.kill().catch(() => {});
    });
    started.result.then(
      (result) => {
        finished = true;
        if (result.exitCode === 0) {
          tar.push(null);
          return;
        }
        tar.destroy(homeExportFailure({ exitCode: result.exitCode, stderr: Buffer.concat(stderr) }, this));
      },
      (error: unknown) => {
        finished = true;
        tar.destroy(error as Error);
      },
    );
    return tar;
  }

  protected importHome(tar: Readable, context: OpContext): Promise<void> {
    if (this.mount) return this.importMounted(tar, context);
    return this.importInTurn(() => this.importNow(tar, context));
  }

  /**
   * Replaces the home whole, at the speed of the exec stream. The archive
   * goes to the pod as it arrives, through checkpoint's `checkHomeArchive`,
   * which applies the checks and limits of a checkpoint restore and passes
   * each entry's bytes on only after the entry passed, so the pod's tar
   * never sees a refused entry; nothing is unpacked or re-packed here. The
   * pod unpacks into a staging folder beside the home, never into it; the
   * staged tree is swapped in only after the whole archive passed and the
   * pod confirms it holds every file, folder and byte the archive states.
   * A refused, aborted or cut import leaves the home as it was.
   */
  private async importNow(tar: Readable, context: OpContext): Promise<void> {
    // Checked on entry, and again here: the deadline may pass while an earlier import runs.
    throwIfDone(context, "workspace import");
    this.refuseDeleted();
    const signal = signalOf(context, "workspace import");
    const stopWatching = destroyOnAbort(tar, signal);
    const checked = checkHomeArchive(tar, this.host.restoreLimits);
    const tag = randomBytes(6).toString("hex");
    const log = loggerOf(context);
    let sent: Awaited<ReturnType<typeof startPodCommand>> | undefined;
    try {
      sent = await startPodCommand(this.commandHost, {
        argv: ["sh", "-c", HOME_TRANSFER_SCRIPTS.stageHome, "stage-home", this.workspacePath, tag],
        workingDir: "/",
        stdin: checked.tar,
        maxOutputBytes: 64 * 1024,
        signal,
      });
      const extracted = await sent.result.catch((error: unknown) => {
        throw signal.aborted ? signal.reason : error;
      });
      if (extracted.exitCode !== 0) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The pod could not unpack the home (exit ${extracted.exitCode}): ${text(extracted.stderr) || "no message"}. The home is as it was.`,
          { retryable: false },
        );
      }
      // A refusal found after the last byte went out (data past the end marker) lands here.
      const stats = await checked.stats;
      const swapped = await runPodCommand(this.commandHost, {
        argv: [
          "sh",
          "-c",
          HOME_TRANSFER_SCRIPTS.swapHome,
          "swap-home",
          this.workspacePath,
          tag,
          String(stats.files),
          String(stats.directories),
          String(stats.bytes),
        ],
        workingDir: "/",
        maxOutputBytes: 64 * 1024,
        signal,
      });
      if (swapped.exitCode === HOME_TRANSFER_EXIT.incomplete) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The home arrived incomplete in ${this.ref} (${text(swapped.stderr)}); nothing was replaced, try again.`,
        );
      }
      if (swapped.exitCode !== 0) {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The pod could not swap in the imported home (exit ${swapped.exitCode}): ${text(swapped.stderr) || "no message"}.`,
          { retryable: false },
        );
      }
      log.info("kubernetes home imported", { ref: this.ref, files: stats.files, bytes: stats.bytes });
    } catch (error) {
      checked.tar.destroy();
      await this.discardStaging(tag, sent);
      throw error;
    } finally {
      stopWatching();
    }
  }

  /**
   * A mounted home is replaced only while no pod mounts it (CONFLICT on a
   * running one, as on local Docker), by a checked restore into the claim
   * where this process sees it; the next pod on this home key mounts it.
   */
  private async importMounted(tar: Readable, context: OpContext): Promise<void> {
    throwIfDone(context, "workspace import");
    if (!this.deleted && (await this.podAlive().catch(() => true))) {
      tar.destroy();
      throw new AgentComputerError(
        "CONFLICT",
        `The home is mounted into running pod ${this.ref}; stop it, import, then provision a machine on the same home key.`,
      );
    }
    const local = this.mount?.localHomeDir;
    if (!local) {
      tar.destroy();
      throw new AgentComputerError(
        "UNSUPPORTED",
        `The home of ${this.ref} lives in the home claim, which this process does not see; set homeClaimLocalPath to where the claim is mounted here (the app's data folder) to import into it.`,
      );
    }
    const stopWatching = destroyOnAbort(tar, signalOf(context, "workspace import"));
    try {
      await restoreHome(tar, local, this.host.restoreLimits);
      await giveToComputer(local);
    } finally {
      stopWatching();
    }
    loggerOf(context).info("kubernetes mounted home imported", { ref: this.ref });
  }

  /** After a failed import: stop what still extracts, then remove its staging folder (best effort). */
  private async discardStaging(tag: string, sent: { kill(): Promise<void> } | undefined): Promise<void> {
    const signal = AbortSignal.timeout(10_000);
    try {
      await sent?.kill();
      await runPodCommand(this.commandHost, {
        argv: ["sh", "-c", HOME_TRANSFER_SCRIPTS.discardStaging, "discard-staging", this.workspacePath, tag],
        workingDir: "/",
        maxOutputBytes: 4096,
        signal,
      });
    } catch {
      // The pod or the connection is gone; the next import removes the folder.
    }
  }

  /** Runs a command through pods/exec, refusing a handle whose pod this process deleted. */
  protected async runCommand(command: MachineCommand, context: OpContext, what: string): Promise<ExecResult> {
    this.refuseDeleted();
    return runPodCommand(this.commandHost, { ...command, signal: signalOf(context, what) });
  }

  private async read(context: OpContext, what: string): Promise<V1Pod> {
    this.refuseDeleted();
    try {
      const pod = await abortable(
        this.host.core.readNamespacedPod({ name: this.podName, namespace: this.host.namespace }),
        signalOf(context, what),
      );
      if (!podIsAlive(pod)) throw this.goneError();
      return pod;
    } catch (error) {
      if (apiStatus(error) === 404) throw this.goneError();
      throw kubernetesApiFailure(error, what, this.host.namespace);
    }
  }

  private async podAlive(): Promise<boolean> {
    try {
      const pod = await this.host.core.readNamespacedPod({ name: this.podName, namespace: this.host.namespace });
      return podIsAlive(pod);
    } catch (error) {
      if (apiStatus(error) === 404) return false;
      throw error;
    }
  }

  /** The pod is going: the display's handle is spent with the bot's. */
  private markDeleted(): void {
    this.deleted = true;
  }

  private refuseDeleted(): void {
    if (this.deleted) throw this.goneError();
  }

  private goneError(): AgentComputerError {
    return new AgentComputerError(
      "PROVIDER_GONE",
      `The pod behind ${this.ref} no longer exists (stopped, deleted or evicted); provision a replacement and restore its home.`,
    );
  }
}

/**
 * Gives a home restored by this process to the computer's user, as the
 * pod's fsGroup would for a fresh volume; only root can, so elsewhere the
 * files keep this process's owner (the claim's group settings then apply).
 */
async function giveToComputer(dir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await lchown(dir, COMPUTER_UID, COMPUTER_GID);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await giveToComputer(path);
    else await lchown(path, COMPUTER_UID, COMPUTER_GID);
  }
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8").trim().slice(0, 500);
}
