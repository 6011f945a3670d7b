import { randomUUID } from "node:crypto";
import type { ErrorCode, Machine } from "@agent-computer/core";
import { AgentComputerError, type Logger, parseInput, silentLogger } from "@agent-computer/core";
import type { ComputerRecord, Reservation } from "@agent-computer/leases";
import { z } from "zod";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerOperation } from "./computer-operation.js";
import type { ComputerOperationsOptions } from "./computer-operations-options.js";
import type { ComputerSlot } from "./computer-slot.js";
import type { DeploymentLedger } from "./deployment-ledger.js";
import { InProcessOperationQueue } from "./in-process-operation-queue.js";
import type { OperationKind } from "./operation-kind.js";
import type { OperationQueue } from "./operation-queue.js";
import type { OperationStage } from "./operation-stage.js";
import type { StageRunner } from "./stage-runner.js";

/** The same timeout the lease engine gives reservations: both turn `interrupted` together. */
export const OPERATION_INTERRUPT_AFTER_MS = 10 * 60_000;

const UNSAVED_WORK =
  "Recovery replaces the machine from the last saved workspace; work not saved since then may be lost.";

const requestSchema = z.object({
  computerId: z.string().min(1).max(256),
  /** Who asks: the only one who may release the operation if it is interrupted. */
  owner: z.string().min(1).max(256),
});
const releaseSchema = z.object({
  id: z.string().min(1).max(256),
  owner: z.string().min(1).max(256),
  workersStopped: z.literal(true, {
    message: "must be true: assert that the operation's workers and their provider calls have stopped",
  }),
});
const waitSchema = z.object({ timeoutMs: z.number().int().positive().max(3_600_000).default(600_000) });
const optionsSchema = z.object({
  queue: z
    .custom<OperationQueue>(
      (v) => typeof v === "object" && v !== null && typeof (v as OperationQueue).publish === "function",
      { message: "expected an OperationQueue" },
    )
    .optional(),
  worker: z.boolean().default(true),
  workerId: z.string().min(1).max(128).optional(),
  heartbeatMs: z
    .number()
    .int()
    .min(10)
    .max(OPERATION_INTERRUPT_AFTER_MS / 2)
    .default(30_000),
  logger: z.unknown().optional(),
});

/**
 * Update and recovery as durable background operations (docs/architecture.md §6). A
 * request stores a queued operation and publishes its id; a worker claims
 * it by compare-and-set (so it never runs twice), reserves the whole
 * computer, and records each real step as a stage while it heartbeats. A
 * worker that stops heartbeating leaves its operation `interrupted` and
 * the computer reserved until the owner calls `releaseInterrupted` and
 * asserts the workers stopped: a stale heartbeat alone never frees it.
 */
export class ComputerOperations {
  readonly workerId: string;
  private readonly queue: OperationQueue;
  private readonly heartbeatMs: number;
  private readonly logger: Logger;
  private readonly unsubscribe: (() => void) | undefined;

  constructor(
    private readonly lifecycle: ComputerLifecycle,
    private readonly ledger: DeploymentLedger,
    options: ComputerOperationsOptions = {},
  ) {
    const parsed = parseInput(optionsSchema, options, "ComputerOperationsOptions");
    this.queue = options.queue ?? new InProcessOperationQueue();
    this.workerId = parsed.workerId ?? `worker-${randomUUID()}`;
    this.heartbeatMs = parsed.heartbeatMs;
    this.logger = options.logger ?? silentLogger;
    this.unsubscribe = parsed.worker ? this.queue.subscribe((id) => this.work(id)) : undefined;
  }

  /**
   * Whether the computer supports an update: it exists and runs on this
   * runtime's provider kind (moving providers is not an update). It says
   * nothing about whether a newer image exists.
   */
  async canUpdate(computerId: string): Promise<boolean> {
    const record = await this.lifecycle.leases.getComputer(
      parseInput(requestSchema.shape.computerId, computerId, "computerId"),
    );
    return record !== undefined && record.providerKind === this.lifecycle.providerKind;
  }

  /**
   * Queues an update: save the live home, provision a machine with the
   * configured provider and image, restore, switch the record to it and
   * destroy the old one. UNSUPPORTED where `canUpdate` is false; LEASE_HELD
   * while the computer is reserved or has an open operation; BOT_BUSY while
   * runs of this process use it.
   */
  async requestUpdate(input: { computerId: string; owner: string }): Promise<ComputerOperation> {
    return this.request("update", parseInput(requestSchema, input, "requestUpdate input"));
  }

  /**
   * Queues a recovery: replace the machine from the last saved workspace
   * without trusting (or saving from) the old one. Work not saved since may
   * be lost, and the operation says so in its warnings.
   */
  async requestRecovery(input: { computerId: string; owner: string }): Promise<ComputerOperation> {
    return this.request("recovery", parseInput(requestSchema, input, "requestRecovery input"));
  }

  /** The operation, or undefined. A running one past its heartbeat timeout reads `interrupted`. */
  async get(id: string): Promise<ComputerOperation | undefined> {
    const operation = await this.ledger.getOperation(parseInput(z.string().min(1).max(256), id, "operation id"));
    return operation && this.effective(operation, await this.ledger.now());
  }

  /** Open operations (queued, running, interrupted), then recent finished ones; optionally of one computer. */
  async list(filter: { computerId?: string } = {}): Promise<ComputerOperation[]> {
    const { computerId } = parseInput(z.object({ computerId: z.string().min(1).optional() }), filter, "list filter");
    const ids = await this.ledger.operationIds(computerId);
    const now = await this.ledger.now();
    const out: ComputerOperation[] = [];
    for (const id of [...ids.open, ...ids.recent.reverse()]) {
      const operation = await this.ledger.getOperation(id);
      if (operation) out.push(this.effective(operation, now));
    }
    return out;
  }

  /**
   * Frees a computer held by an interrupted operation, for its owner only,
   * who asserts with `workersStopped: true` that its workers and their
   * provider calls have stopped. Then recovery is available. LEASE_HELD for
   * another owner or while the operation still heartbeats; CONFLICT when it
   * is not interrupted; INVALID_ARGUMENT without the assertion.
   */
  async releaseInterrupted(input: { id: string; owner: string; workersStopped: true }): Promise<ComputerOperation> {
    const { id, owner } = parseInput(releaseSchema, input, "releaseInterrupted input");
    const operation = await this.get(id);
    if (!operation) throw new AgentComputerError("NOT_FOUND", `No operation "${id}".`);
    if (operation.owner !== owner) {
      throw new AgentComputerError(
        "LEASE_HELD",
        `Operation "${id}" belongs to another owner; only its owner may release it.`,
        {
          details: { id },
        },
      );
    }
    if (operation.released) return operation;
    if (operation.status === "running") {
      throw new AgentComputerError(
        "LEASE_HELD",
        `Operation "${id}" still heartbeats; it can be released only once interrupted (ten minutes without a heartbeat).`,
        { details: { id, heartbeatAt: operation.heartbeatAt } },
      );
    }
    if (operation.status !== "interrupted") {
      throw new AgentComputerError(
        "CONFLICT",
        `Operation "${id}" is ${operation.status}, not interrupted; nothing to release.`,
        {
          details: { id, status: operation.status },
        },
      );
    }
    if (operation.reservationId)
      await this.lifecycle.leases.releaseInterrupted({ id: operation.reservationId, workersStopped: true });
    const now = await this.ledger.now();
    const released = await this.ledger.updateOperation(id, operation.version, (current) => ({
      ...fieldsOf(current),
      status: "interrupted",
      released: { at: now, by: owner },
      warnings: [...current.warnings, `Released by its owner, who asserted its workers stopped. ${UNSAVED_WORK}`],
    }));
    this.logger.warn("interrupted computer operation released", { id, computerId: released.computerId });
    return released;
  }

  /** Resolves once the operation leaves queued and running (or rejects with TIMEOUT). */
  async waitFor(id: string, options: { timeoutMs?: number } = {}): Promise<ComputerOperation> {
    const { timeoutMs } = parseInput(waitSchema, options, "waitFor options");
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const operation = await this.get(id);
      if (!operation) throw new AgentComputerError("NOT_FOUND", `No operation "${id}".`);
      if (operation.status !== "queued" && operation.status !== "running") return operation;
      if (performance.now() >= deadline)
        throw new AgentComputerError(
          "TIMEOUT",
          `Operation "${id}" is still ${operation.status} after ${timeoutMs} ms.`,
        );
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops taking operations from the queue; running ones finish. */
  close(): void {
    this.unsubscribe?.();
  }

  /** @internal For the reconciler: publishes queued operations older than `olderThanMs` again. */
  async republishQueued(olderThanMs: number): Promise<string[]> {
    const now = await this.ledger.now();
    const republished: string[] = [];
    for (const id of (await this.ledger.operationIds()).open) {
      const operation = await this.ledger.getOperation(id);
      if (operation?.status !== "queued" || now - operation.requestedAt < olderThanMs) continue;
      await this.queue.publish(id);
      republished.push(id);
    }
    return republished;
  }

  /** @internal For the reconciler: stores `interrupted` on running operations past their heartbeat timeout. */
  async markInterrupted(): Promise<string[]> {
    const now = await this.ledger.now();
    const marked: string[] = [];
    for (const id of (await this.ledger.operationIds()).open) {
      const operation = await this.ledger.getOperation(id);
      if (operation?.status !== "running" || this.effective(operation, now).status !== "interrupted") continue;
      try {
        await this.ledger.updateOperation(id, operation.version, (current) => ({
          ...fieldsOf(current),
          status: "interrupted",
        }));
        marked.push(id);
      } catch (error) {
        // Its worker wrote in between: it is alive after all.
        if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      }
    }
    return marked;
  }

  /** @internal Computers held by open operations (their machines are never orphans). */
  async openComputerIds(): Promise<Set<string>> {
    const out = new Set<string>();
    for (const id of (await this.ledger.operationIds()).open) {
      const operation = await this.ledger.getOperation(id);
      if (operation) out.add(operation.computerId);
    }
    return out;
  }

  /**
   * @internal The queue's worker: claims a queued operation and runs it. An
   * operation already claimed (or finished) is left alone: never replayed.
   */
  async work(id: string): Promise<void> {
    const queued = await this.ledger.getOperation(id);
    if (queued?.status !== "queued") return;
    const now = await this.ledger.now();
    let claimed: ComputerOperation;
    try {
      claimed = await this.ledger.updateOperation(id, queued.version, (current) => ({
        ...fieldsOf(current),
        status: "running",
        worker: this.workerId,
        startedAt: now,
        heartbeatAt: now,
      }));
    } catch (error) {
      if (AgentComputerError.is(error, "CONFLICT")) return; // another worker claimed it first
      throw error;
    }
    await new OperationRun(this.lifecycle, this.ledger, claimed, this.heartbeatMs, this.logger).run();
  }

  private async request(kind: OperationKind, input: { computerId: string; owner: string }): Promise<ComputerOperation> {
    const { computerId, owner } = input;
    const record = await this.lifecycle.leases.getComputer(computerId);
    if (!record) throw new AgentComputerError("NOT_FOUND", `Computer "${computerId}" does not exist.`);
    if (kind === "update" && record.providerKind !== this.lifecycle.providerKind) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `Computer "${computerId}" runs on "${record.providerKind}", not this runtime's "${this.lifecycle.providerKind}"; an update rebuilds on the same provider. Use recovery to replace it.`,
      );
    }
    const reserved = await this.lifecycle.leases.getReservation(computerId);
    if (reserved) {
      throw new AgentComputerError(
        "LEASE_HELD",
        reserved.status === "interrupted"
          ? `Computer "${computerId}" stays reserved for an interrupted ${reserved.purpose}; its owner must release it first.`
          : `Computer "${computerId}" is reserved for ${reserved.purpose}; retry when it finishes.`,
        { details: { computerId, purpose: reserved.purpose, status: reserved.status } },
      );
    }
    const runs = this.lifecycle.activeRuns(computerId);
    if (runs > 0)
      throw new AgentComputerError("BOT_BUSY", `Stop the bots first: ${runs} run(s) use computer "${computerId}".`);
    // Runs of other workers too: their execution leases are in the store.
    await this.lifecycle.refuseWhileBotsRun(computerId, kind === "update" ? "update" : "recover");
    const operation = await this.ledger.createOperation({
      id: `op-${randomUUID()}`,
      computerId,
      kind,
      status: "queued",
      owner,
      requestedAt: await this.ledger.now(),
      stages: [],
      warnings: kind === "recovery" ? [UNSAVED_WORK] : [],
    });
    try {
      await this.queue.publish(operation.id);
    } catch (error) {
      // The operation is stored: the reconciler republishes it.
      this.logger.warn("publishing a computer operation failed; the reconciler republishes it", {
        id: operation.id,
        error: String(error),
      });
    }
    return operation;
  }

  private effective(operation: ComputerOperation, now: number): ComputerOperation {
    if (operation.status === "running" && now - (operation.heartbeatAt ?? 0) >= OPERATION_INTERRUPT_AFTER_MS)
      return { ...operation, status: "interrupted" };
    return operation;
  }
}

/**
 * One claimed operation on its worker: reserves the computer, heartbeats,
 * records stages, and writes the outcome before releasing the reservation
 * (so a crash in between leaves it reserved, never half-free).
 */
class OperationRun {
  private version: number;
  private operation: ComputerOperation;
  private writes: Promise<unknown> = Promise.resolve();
  /** Set when this worker lost the operation (released, interrupted) or its reservation. */
  private lost: AgentComputerError | undefined;
  private reservation: Reservation | undefined;

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
    const { id, computerId, kind, worker } = this.operation;
    try {
      this.reservation = await this.lifecycle.leases.reserve({
        computerId,
        holder: `operation:${id}:${worker}`,
        purpose: kind,
      });
    } catch (error) {
      await this.finish("failed", error, []).catch(() => {});
      return;
    }
    const reservationId = this.reservation.id;
    await this.change((c) => ({ ...c, reservationId }));
    const heartbeat = setInterval(() => void this.heartbeat(), this.heartbeatMs);
    heartbeat.unref?.();
    let outcome: { status: "succeeded" | "failed"; error?: unknown; warnings: string[] };
    try {
      const warnings = await this.lifecycle.underOperation(computerId, (slot) =>
        kind === "update" ? this.update(slot) : this.recover(slot),
      );
      outcome = { status: "succeeded", warnings };
    } catch (error) {
      outcome = { status: "failed", error, warnings: await this.failureWarnings(error) };
    } finally {
      clearInterval(heartbeat);
    }
    if (this.lost) {
      // Someone released the computer after this worker was declared gone: it no longer owns anything.
      this.logger.warn("a computer operation lost its claim and stopped", { id, error: this.lost.message });
      return;
    }
    try {
      await this.finish(outcome.status, outcome.error, outcome.warnings);
      await this.lifecycle.leases.release(this.reservation);
    } catch (error) {
      this.logger.warn("finishing a computer operation failed; it turns interrupted", { id, error: String(error) });
    }
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
    if (this.lost) throw this.lost;
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

  private async heartbeat(): Promise<void> {
    if (!this.reservation || this.lost) return;
    try {
      this.reservation = await this.lifecycle.leases.renew(this.reservation);
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

function fieldsOf(operation: ComputerOperation): Omit<ComputerOperation, "version"> {
  const { version: _version, ...fields } = operation;
  return fields;
}

function isDetail(value: unknown): value is Record<string, string | number | boolean> {
  return (
    typeof value === "object" &&
    value !== null &&
    !("ref" in value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

function codeOf(error: unknown): ErrorCode {
  return AgentComputerError.is(error) ? error.code : "UNAVAILABLE";
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
