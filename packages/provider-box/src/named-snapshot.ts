import { createHash } from "node:crypto";
import { AgentComputerError, type Logger, loggerOf, type OpContext } from "@agent-computer/core";
import { BOX_READY_STATES, idempotencyKey } from "./box-client.js";
import { BoxMachine, type BoxMachineHost, waitForState } from "./box-machine.js";

/** The snapshot's name for a setup: follows its hash, so a changed setup gets a new snapshot. */
export function snapshotNameOf(setup: string): string {
  return `agent-computer-${createHash("sha256").update(setup).digest("hex").slice(0, 16)}`;
}

export type SnapshotState = "missing" | "building" | "ready" | "failed";

/**
 * The named snapshot boxes start from once it exists. `resolve` answers the
 * name when the service has it ready; otherwise it starts one build in the
 * background (a fresh box, created with `noEnv` and never given a home or
 * bot data: the setup runs in it, then its disk is snapshotted under the
 * name and the box deleted) and answers undefined, so the caller's computer
 * runs the setup itself. Each change is a `snapshot` log event
 * (`missing`, `building`, `ready`, `failed`); a failed build is tried again
 * by a later provision.
 */
export class NamedSnapshot {
  readonly name: string;
  private state: SnapshotState | undefined;
  private building: Promise<void> | undefined;

  constructor(
    private readonly host: BoxMachineHost,
    readonly setup: string,
  ) {
    this.name = snapshotNameOf(setup);
  }

  /** The name to create from, or undefined (then run the setup in the new box). */
  async resolve(context: OpContext, signal: AbortSignal): Promise<string | undefined> {
    if (this.state === "ready") return this.name;
    const logger = loggerOf(context);
    const found = (await this.host.client.listNamedSnapshots(signal)).find((s) => s.name === this.name);
    if (found?.state === "ready") {
      this.note(logger, "ready");
      return this.name;
    }
    if (found?.state === "building" && !this.building) {
      // Another process builds it: wait for it in the background, as our own build would.
      this.note(logger, "building");
      this.building = this.waitReady(logger).finally(() => (this.building = undefined));
      this.building.catch(() => {});
      return undefined;
    }
    if (!this.building) {
      this.note(logger, "missing");
      this.building = this.build(logger).finally(() => (this.building = undefined));
      this.building.catch(() => {});
    }
    return undefined;
  }

  /** Resolves once a build under way ends (tests and shutdown wait on it). */
  async settled(): Promise<void> {
    await this.building?.catch(() => {});
  }

  private async build(logger: Logger): Promise<void> {
    const { client, options } = this.host;
    const signal = AbortSignal.timeout(options.startTimeoutMs + options.setupTimeoutMs + 600_000);
    let boxId: string | undefined;
    try {
      this.note(logger, "building");
      const box = await client.create({ noEnv: true, ttlSeconds: options.ttlSeconds }, idempotencyKey(), signal);
      boxId = box.id;
      await client.update(box.id, { name: `${this.name}-build` }, signal);
      await waitForState(this.host, box.id, signal, (state) => BOX_READY_STATES.has(state));
      const machine = new BoxMachine(this.host, box.id);
      await machine.runSetup(this.setup, options.setupTimeoutMs);
      await client.snapshot(box.id, this.name, signal);
      await this.waitReady(logger, signal);
    } catch (error) {
      this.note(logger, "failed", error);
      throw error;
    } finally {
      if (boxId) await client.delete(boxId, AbortSignal.timeout(60_000)).catch(() => {});
    }
  }

  private async waitReady(logger: Logger, signal = AbortSignal.timeout(this.host.options.setupTimeoutMs)) {
    for (;;) {
      const found = (await this.host.client.listNamedSnapshots(signal)).find((s) => s.name === this.name);
      if (found?.state === "ready") {
        this.note(logger, "ready");
        return;
      }
      if (!found || found.state === "failed") {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The named snapshot ${this.name} was not made (${found?.state ?? "missing"}).`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  private note(logger: Logger, state: SnapshotState, error?: unknown): void {
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
