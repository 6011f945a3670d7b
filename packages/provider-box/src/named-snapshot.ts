import { createHash } from "node:crypto";
import { AgentComputerError, type Logger, loggerOf, type OpContext } from "@agent-computer/core";
import { BOAT_READY_STATES, idempotencyKey } from "./boat-client.js";
import { BoatMachine, type BoatMachineHost, waitForState } from "./boat-machine.js";

/** The snapshot's name for a setup: follows its hash, so a changed setup gets a new snapshot. */
export function snapshotNameOf(setup: string): string {
  return `agent-computer-${createHash("sha256").update(setup).digest("hex").slice(0, 16)}`;
}

export type SnapshotState = "missing" | "building" | "ready" | "failed";

/** How often a save under way is looked at (op:getNamedSnapshot). */
const SAVE_POLL_MS = 1_000;

/**
 * The named snapshot sandboxes start from once it exists. `resolve`
 * answers the name when the service has it ready; otherwise it starts one
 * build in the background (a fresh sandbox, created with `noEnv` and never
 * given a home or bot data: the setup runs in it, then op:saveNamedSnapshot
 * saves its disk under the name and the sandbox is deleted) and answers
 * undefined, so the caller's computer
 * runs the setup itself. Each change is a `snapshot` log event
 * (`missing`, `building`, `ready`, `failed`); a failed build is tried again
 * by a later provision.
 */
export class NamedSnapshot {
  readonly name: string;
  private state: SnapshotState | undefined;
  private building: Promise<void> | undefined;

  constructor(
    private readonly host: BoatMachineHost,
    readonly setup: string,
  ) {
    this.name = snapshotNameOf(setup);
  }

  /** The name to create from, or undefined (then run the setup in the new box). */
  async resolve(context: OpContext, signal: AbortSignal): Promise<string | undefined> {
    if (this.state === "ready") return this.name;
    const logger = loggerOf(context);
    const found = await this.host.client.namedSnapshot(this.name, signal);
    if (found?.status === "ready") {
      this.note(logger, "ready");
      return this.name;
    }
    if (found?.status === "saving" && !this.building) {
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
    let sandboxId: string | undefined;
    try {
      this.note(logger, "building");
      const sandbox = await client.create({ noEnv: true, ttlSeconds: options.ttlSeconds }, idempotencyKey(), signal);
      sandboxId = sandbox.id;
      await client.update(sandbox.id, { name: `${this.name} build` }, signal);
      await waitForState(this.host, sandbox.id, signal, (state) => BOAT_READY_STATES.has(state));
      const machine = new BoatMachine(this.host, sandbox.id, 0, Date.now());
      await machine.runSetup(this.setup, options.setupTimeoutMs);
      await client.saveNamedSnapshot(sandbox.id, this.name, signal).catch((error) => {
        // 409 save_in_progress: another process saves this name; its save is waited for below.
        if (!(AgentComputerError.is(error, "CONFLICT") && error.details?.code === "save_in_progress")) throw error;
      });
      await this.waitReady(logger, signal);
    } catch (error) {
      this.note(logger, "failed", error);
      throw error;
    } finally {
      if (sandboxId) {
        await client.delete(sandboxId, AbortSignal.timeout(60_000)).catch((error) =>
          logger.warn("snapshot build sandbox could not be deleted", {
            ref: `box:${sandboxId}`,
            error: AgentComputerError.is(error) ? error.message : String(error),
          }),
        );
      }
    }
  }

  private async waitReady(logger: Logger, signal = AbortSignal.timeout(this.host.options.setupTimeoutMs)) {
    for (;;) {
      const found = await this.host.client.namedSnapshot(this.name, signal);
      if (found?.status === "ready") {
        this.note(logger, "ready");
        return;
      }
      if (!found || found.status === "failed") {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The named snapshot ${this.name} was not made (${found ? `failed${found.error ? `: ${this.host.client.redact(found.error)}` : ""}` : "missing"}).`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, SAVE_POLL_MS));
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
