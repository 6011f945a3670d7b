import { createHash, randomBytes } from "node:crypto";
import { AgentComputerError, type Logger, loggerOf, type OpContext } from "@agent-computer/core";
import { abortableSleep } from "@agent-computer/provider-kit";
import { BoxdMachine, type BoxdMachineHost, bringUp } from "./boxd-machine.js";

/** The setup snapshot's name: follows the setup's hash, so a changed setup gets a snapshot of its own. */
export function setupSnapshotNameOf(setup: string): string {
  return `ac-setup-${createHash("sha256").update(setup).digest("hex").slice(0, 16)}`;
}

/** What the log says of the setup snapshot (`snapshot` events). */
export type SetupSnapshotState = "missing" | "building" | "ready" | "failed";

/** How often a capture under way is looked at (GetSnapshot). */
const CAPTURE_POLL_MS = 1_000;

/** A snapshot as GetSnapshot answers it ([vm] SnapshotInfo), or undefined when there is none (NOT_FOUND). */
interface SnapshotSeen {
  status: string;
  version: number;
}

/**
 * The snapshot machines start from once it is ready. `resolve` answers its
 * name when GetSnapshot says ready; otherwise it starts one build in the
 * background and answers undefined, so the caller's machine runs the setup
 * itself. A build makes a fresh machine of `imageRef` (isolated, never given
 * a home or bot data), runs the setup in it, saves it with CreateSnapshot
 * (memory and disk, [vm]: "pending" until stored, then "ready" or
 * "failed"), waits for ready and destroys the machine. Each change is a
 * `snapshot` log event; a failed build is tried again by a later provision,
 * and a capture another process started is waited for, not repeated.
 */
export class SetupSnapshot {
  readonly name: string;
  private state: SetupSnapshotState | undefined;
  private building: Promise<void> | undefined;

  constructor(
    private readonly host: BoxdMachineHost,
    readonly setup: string,
  ) {
    this.name = setupSnapshotNameOf(setup);
  }

  /** The snapshot to create from, or undefined (then the new machine runs the setup). */
  async resolve(context: OpContext, signal: AbortSignal): Promise<string | undefined> {
    if (this.state === "ready") return this.name;
    const logger = loggerOf(context);
    const seen = await this.look(signal);
    if (seen?.status === "ready") {
      this.note(logger, "ready");
      return this.name;
    }
    if (this.building) return undefined;
    if (seen?.status === "pending") {
      // Another process captures it: wait for that in the background, as for our own.
      this.note(logger, "building");
      this.inBackground(logger, () => this.waitReady(logger, 0));
    } else {
      this.note(logger, "missing");
      this.inBackground(logger, () => this.build(logger));
    }
    return undefined;
  }

  /** Resolves once a build under way ends (tests and shutdown wait on it). */
  async settled(): Promise<void> {
    await this.building?.catch(() => {});
  }

  /** Runs a build or a wait in the background; its failure is a `failed` event, and a later provision tries again. */
  private inBackground(logger: Logger, work: () => Promise<void>): void {
    this.building = work()
      .catch((error: unknown) => {
        this.note(logger, "failed", error);
        throw error;
      })
      .finally(() => (this.building = undefined));
    this.building.catch(() => {});
  }

  private async build(logger: Logger): Promise<void> {
    const { client, options } = this.host;
    const signal = AbortSignal.timeout(options.startTimeoutMs + options.setupTimeoutMs + 600_000);
    // Not of the form our computers' names have (boxd-names.ts): never listed, never reconnected.
    const vm = `ac-build-${randomBytes(4).toString("hex")}`;
    this.note(logger, "building");
    try {
      await client.call(
        "CreateVm",
        { name: vm, image_ref: options.imageRef, isolated: true, ...(options.org ? { org: options.org } : {}) },
        `create ${vm}`,
        signal,
        "not-found",
      );
      await bringUp(this.host, vm, signal);
      // Off, as for every machine: a machine reached only through Exec looks idle to the service.
      await client.call("SetAutoSuspendTimeout", { vm_id: vm, timeout_secs: 0 }, "set the auto-suspend timer", signal);
      await client.call(
        "SetAutoHibernateTimeout",
        { vm_id: vm, timeout_secs: 0 },
        "set the auto-hibernate timer",
        signal,
      );
      await new BoxdMachine(this.host, vm).runSetup(this.setup, options.setupTimeoutMs);
      const taken = await client.call("CreateSnapshot", { vm, name: this.name }, `snapshot ${vm}`, signal);
      await this.waitReady(logger, Number(taken.version), signal);
    } finally {
      await client.call("DestroyVm", { vm_id: vm }, `destroy ${vm}`, AbortSignal.timeout(60_000)).catch((error) => {
        if (AgentComputerError.is(error, "PROVIDER_GONE")) return;
        logger.warn("the setup snapshot's build machine could not be destroyed", {
          vm,
          error: AgentComputerError.is(error) ? error.message : String(error),
        });
      });
    }
  }

  /** Waits until the snapshot (at `version` or later) is ready; failed is an error, NOT_FOUND is not yet stored. */
  private async waitReady(
    logger: Logger,
    version: number,
    signal = AbortSignal.timeout(this.host.options.setupTimeoutMs),
  ): Promise<void> {
    for (;;) {
      const seen = await this.look(signal);
      if (seen?.status === "ready" && seen.version >= version) {
        this.note(logger, "ready");
        return;
      }
      if (seen?.status === "failed") {
        throw new AgentComputerError("UNAVAILABLE", `The setup snapshot ${this.name} could not be stored (failed).`);
      }
      await abortableSleep(CAPTURE_POLL_MS, signal);
    }
  }

  private async look(signal: AbortSignal): Promise<SnapshotSeen | undefined> {
    const { client, options } = this.host;
    try {
      const answer = await client.call(
        "GetSnapshot",
        { name: this.name, ...(options.org ? { org: options.org } : {}) },
        `look up snapshot ${this.name}`,
        signal,
        "not-found",
      );
      const info = (answer.snapshot ?? {}) as { status?: unknown; version?: unknown };
      return { status: String(info.status ?? ""), version: Number(info.version ?? 0) };
    } catch (error) {
      if (AgentComputerError.is(error, "NOT_FOUND")) return undefined;
      throw error;
    }
  }

  private note(logger: Logger, state: SetupSnapshotState, error?: unknown): void {
    if (this.state === state) return;
    this.state = state;
    const fields = {
      name: this.name,
      state,
      ...(error ? { error: AgentComputerError.is(error) ? error.message : String(error) } : {}),
    };
    if (state === "failed") logger.warn("snapshot", fields);
    else logger.info("snapshot", fields);
  }
}
