import type { Machine } from "@agent-computer/core";
import { AgentComputerError, type Logger } from "@agent-computer/core";
import type { ComputerRecord, Reservation } from "@agent-computer/leases";
import { moveBot } from "./bot-move.js";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerOperation } from "./computer-operation.js";
import type { ComputerSlot } from "./computer-slot.js";
import type { DeploymentLedger } from "./deployment-ledger.js";
import { codeOf, errorText, fieldsOf, isDetail, UNSAVED_WORK } from "./operation-fields.js";
import type { OperationStage } from "./operation-stage.js";
import type { StageRunner } from "./stage-runner.js";

/**
 * One claimed operation on its worker: reserves the computer, heartbeats,
 * records stages, and writes the outcome before releasing the reservation
 * (so a crash in between leaves it reserved, never half-free).
 */
export class OperationRun {
  private version: number;
  private operation: ComputerOperation;
  private writes: Promise<unknown> = Promise.resolve();
  /** Set when this worker lost the operation (released, interrupted) or its reservation. */
  private lost: AgentComputerError | undefined;
  private reservation: Reservation | undefined;
  /** A mode change's second reservation, of the computer the bot moves to. */
  private targetReservation: Reservation | undefined;

  constructor(
    private readonly lifecycle: ComputerLifecycle,
    private readonly ledger: DeploymentLedger,
    claimed: ComputerOperation,
    private readonly heartbeatMs: number,
    private readonly logger: Logger,
  ) {
    this.operation = claimed;
    this.version = claimed.version;
  }

  async run(): Promise<void> {
    const { id, computerId, kind, worker, modeChange } = this.operation;
    const holder = `operation:${id}:${worker}`;
    try {
      this.reservation = await this.lifecycle.leases.reserve({ computerId, holder, purpose: kind });
      const target = modeChange?.targetComputerId;
      if (target)
        this.targetReservation = await this.lifecycle.leases.reserve({ computerId: target, holder, purpose: kind });
    } catch (error) {
      await this.finish("failed", error, []).catch(() => {});
      await this.releaseReservations();
      return;
    }
    const ids = { reservationId: this.reservation.id, targetReservationId: this.targetReservation?.id };
    await this.change((c) => ({ ...c, ...definedOf(ids) }));
    const heartbeat = setInterval(() => void this.heartbeat(), this.heartbeatMs);
    heartbeat.unref?.();
    let outcome: { status: "succeeded" | "failed"; error?: unknown; warnings: string[] };
    try {
      const warnings = modeChange
        ? await moveBot(this.lifecycle, this.stageRunner(), computerId, modeChange)
        : await this.lifecycle.underOperation(computerId, (slot) =>
            kind === "update" ? this.update(slot) : this.recover(slot),
          );
      outcome = { status: "succeeded", warnings };
    } catch (error) {
      outcome = { status: "failed", error, warnings: await this.failureWarnings(error) };
    } finally {
      clearInterval(heartbeat);
    }
    if (this.lost) {
      await this.settleAfterLoss();
      return;
    }
    try {
      await this.finish(outcome.status, outcome.error, outcome.warnings);
      await this.releaseReservations();
    } catch (error) {
      // Declared gone just as it finished (the reconciler stored `interrupted`): its calls have settled all the same.
      if (this.lost) await this.settleAfterLoss();
      else
        this.logger.warn("finishing a computer operation failed; it turns interrupted", { id, error: String(error) });
    }
  }

  /**
   * This worker lost its claim (its heartbeat lapsed, so the operation reads
   * `interrupted`, or its owner released it) and its work has returned now:
   * every provider call it started for the operation has settled, since the
   * work awaits each one and no stage starts once the claim is lost
   * (`confirmClaim`). Records that as `settled` in the operation, in a
   * compare-and-set that any worker's reconciler or release races safely,
   * then releases the reservation: recovery is available without an
   * explicit release. Nothing is written when the owner released it first.
   */
  private async settleAfterLoss(): Promise<void> {
    const { id, worker } = this.operation;
    await this.writes;
    const at = await this.ledger.now();
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.ledger.getOperation(id);
      const mine = current?.worker === worker && (current?.status === "running" || current?.status === "interrupted");
      if (!current || !mine || current.released || current.settled) {
        this.logger.warn("a computer operation lost its claim and stopped", { id, error: this.lost?.message });
        return;
      }
      try {
        await this.ledger.updateOperation(id, current.version, (c) => ({
          ...fieldsOf(c),
          status: "interrupted",
          settled: { at },
          // The stage whose call hung could not record its end: it ends here, as interrupted.
          stages: c.stages.map((stage) =>
            stage.status === "running"
              ? { ...stage, status: "failed", endedAt: at, detail: { error: "interrupted: its calls returned late" } }
              : stage,
          ),
          warnings: [...c.warnings, `Its provider calls settled after it was interrupted. ${UNSAVED_WORK}`],
        }));
        break;
      } catch (error) {
        if (!AgentComputerError.is(error, "CONFLICT") || attempt === 4) throw error;
      }
    }
    // Written first, released second: a crash in between leaves the computer reserved, never half free.
    await this.releaseReservations();
    this.logger.warn("an interrupted computer operation's provider calls settled; its computer is free", { id });
  }

  /** Releases what this worker reserved; harmless when a release or a newer holder came first. */
  private async releaseReservations(): Promise<void> {
    for (const reservation of [this.reservation, this.targetReservation])
      if (reservation) await this.lifecycle.leases.release(reservation);
  }

  private async update(slot: ComputerSlot): Promise<string[]> {
    const warnings: string[] = [];
    let record = await this.record();
    const old = await this.lifecycle.currentMachine(slot, record);
    await this.stage("checkpointing", async () => {
      if (!old) {
        warnings.push(
          `The previous machine was gone; the update continues from the last saved workspace (revision ${record.revision}).`,
        );
        return { skipped: true, revision: record.revision };
      }
      return { revision: await this.lifecycle.checkpointLive(slot, old, "update") };
    });
    record = await this.record();
    const next = await this.lifecycle.replaceMachine(slot, record, this.stageRunner());
    await this.removeOld(old, next, warnings);
    return warnings;
  }

  private async recover(slot: ComputerSlot): Promise<string[]> {
    const warnings: string[] = [];
    const record = await this.record();
    // The old machine is not trusted: nothing is read from or saved out of it.
    const next = await this.lifecycle.replaceMachine(slot, record, this.stageRunner());
    const old =
      record.providerRef && record.providerRef !== next.ref
        ? await this.lifecycle.currentMachine(slot, record).catch(() => undefined)
        : undefined;
    await this.removeOld(old, next, warnings);
    return warnings;
  }

  private async removeOld(old: Machine | undefined, next: Machine, warnings: string[]): Promise<void> {
    if (!old || old.ref === next.ref) {
      await this.stage("removing-old", async () => ({ skipped: true }));
      return;
    }
    try {
      await this.stage("removing-old", async () => {
        await old.destroy();
        return {};
      });
    } catch (error) {
      if (this.lost) throw error;
      // The computer already runs on the new machine; the reconciler removes the orphan.
      warnings.push(
        `The previous machine could not be removed (${errorText(error)}); the reconciler removes it later.`,
      );
    }
  }

  private async failureWarnings(error: unknown): Promise<string[]> {
    const record = await this.lifecycle.leases.getComputer(this.operation.computerId).catch(() => undefined);
    const revision = record?.revision ?? 0;
    const saved = `The workspace saved at revision ${revision} stays restorable.`;
    if (this.operation.modeChange) {
      return [`Bot "${this.operation.modeChange.botId}" stays on "${this.operation.computerId}" with its files.`];
    }
    const failedStage = this.operation.stages.find((s) => s.status === "failed")?.name;
    if (this.operation.kind === "update" && failedStage === "checkpointing") {
      return [
        `The live work could not be saved (${errorText(error)}), so the machine was not replaced. ${saved} ${UNSAVED_WORK}`,
      ];
    }
    return [`The computer keeps its previous machine. ${saved} ${UNSAVED_WORK}`];
  }

  private async record(): Promise<ComputerRecord> {
    const record = await this.lifecycle.leases.getComputer(this.operation.computerId);
    if (!record) throw new AgentComputerError("NOT_FOUND", `Computer "${this.operation.computerId}" was deleted.`);
    return record;
  }

  private stageRunner(): StageRunner {
    return (name, work) => this.stage(name, work);
  }

  /** Records a stage around `work`; a result object with `skipped: true` marks it skipped. */
  private async stage<T>(name: OperationStage["name"], work: () => Promise<T>): Promise<T> {
    await this.confirmClaim();
    const startedAt = await this.ledger.now();
    await this.change((c) => ({ ...c, stages: [...c.stages, { name, status: "running", startedAt }] }));
    let status: OperationStage["status"] = "done";
    let detail: OperationStage["detail"];
    try {
      const result = await work();
      if (isDetail(result)) {
        detail = result;
        if (result.skipped === true) status = "skipped";
      }
      return result;
    } catch (error) {
      status = "failed";
      detail = { error: errorText(error) };
      throw error;
    } finally {
      const endedAt = await this.ledger.now();
      await this.change((c) => ({
        ...c,
        stages: c.stages.map((s, i) =>
          i === c.stages.length - 1 ? { ...s, status, endedAt, ...(detail ? { detail } : {}) } : s,
        ),
      })).catch(() => {});
    }
  }

  /**
   * Heartbeats now, before a stage starts its provider calls: a worker that
   * was paused or cut off past the timeout learns it lost its claim here
   * and starts nothing more (LEASE_LOST), so its calls can settle.
   */
  private async confirmClaim(): Promise<void> {
    await this.heartbeat();
    if (this.lost) throw this.lost;
  }

  private async heartbeat(): Promise<void> {
    if (!this.reservation || this.lost) return;
    try {
      this.reservation = await this.lifecycle.leases.renew(this.reservation);
      if (this.targetReservation) this.targetReservation = await this.lifecycle.leases.renew(this.targetReservation);
      const at = await this.ledger.now();
      await this.change((c) => ({ ...c, heartbeatAt: at }));
    } catch (error) {
      if (AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT")) this.lost = error;
    }
  }

  private async finish(status: "succeeded" | "failed", error: unknown, warnings: string[]): Promise<void> {
    const finishedAt = await this.ledger.now();
    const failure = error === undefined ? undefined : { code: codeOf(error), message: errorText(error) };
    await this.change((c) => ({
      ...c,
      status,
      finishedAt,
      warnings: [...c.warnings, ...warnings],
      ...(failure ? { error: failure } : {}),
    }));
  }

  /**
   * Writes one change of this worker's operation, one at a time. Refuses
   * (and marks this worker as having lost it) once the operation is no
   * longer running under this worker.
   */
  private change(apply: (current: Omit<ComputerOperation, "version">) => Omit<ComputerOperation, "version">) {
    const write = this.writes.then(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          this.operation = await this.ledger.updateOperation(this.operation.id, this.version, (current) => {
            if (current.status !== "running" || current.worker !== this.operation.worker) {
              this.lost ??= new AgentComputerError(
                "LEASE_LOST",
                `Operation "${current.id}" is ${current.status}${current.released ? " and released" : ""}; this worker must stop.`,
              );
              throw this.lost;
            }
            return apply(fieldsOf(current));
          });
          this.version = this.operation.version;
          return;
        } catch (error) {
          if (!AgentComputerError.is(error, "CONFLICT") || attempt >= 5) throw error;
          const current = await this.ledger.getOperation(this.operation.id);
          if (current) this.version = current.version;
        }
      }
    });
    this.writes = write.catch(() => {});
    return write;
  }
}

/** The fields whose value is defined, for a record that must not store `undefined`. */
function definedOf<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}
