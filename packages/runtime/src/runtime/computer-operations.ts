import { randomUUID } from "node:crypto";
import {
  AgentComputerError,
  botIdSchema,
  type Logger,
  parseInput,
  silentLogger,
  workspaceIdSchema,
} from "@agent-computer/core";
import { z } from "zod";
import type { BotMode } from "./bot-mode.js";
import { computerIdFor } from "./computer-id-for.js";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerOperation } from "./computer-operation.js";
import type { ComputerOperationsOptions } from "./computer-operations-options.js";
import type { DeploymentLedger } from "./deployment-ledger.js";
import { InProcessOperationQueue } from "./in-process-operation-queue.js";
import { fieldsOf, UNSAVED_WORK } from "./operation-fields.js";
import type { OperationKind } from "./operation-kind.js";
import type { OperationQueue } from "./operation-queue.js";
import { OperationRun } from "./operation-run.js";

/** The same timeout the lease engine gives reservations: both turn `interrupted` together. */
export const OPERATION_INTERRUPT_AFTER_MS = 10 * 60_000;

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
const modeChangeSchema = z.object({
  workspaceId: workspaceIdSchema,
  botId: botIdSchema,
  to: z.enum(["team", "private"]),
  owner: requestSchema.shape.owner,
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
 * Update, recovery and mode changes as durable background operations (docs/architecture.md §6). A
 * request stores a queued operation and publishes its id; a worker claims
 * it by compare-and-set (so it never runs twice), reserves the whole
 * computer, and records each real step as a stage while it heartbeats. A
 * worker that stops heartbeating leaves its operation `interrupted` and
 * the computer reserved until its provider calls settle (the worker comes
 * back, marks the operation `settled` and releases the reservation) or,
 * for a worker gone for good, the owner calls `releaseInterrupted` and
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

  /**
   * Queues a mode change: moves a bot from its workspace's Team computer to
   * a Private computer of its own (`to: "private"`), or back (`"team"`),
   * with its files (OPERATIONS.md, "Mode changes"). It reserves both
   * computers while it runs. NOT_FOUND when there is nothing to move (no
   * Team computer; no Private computer to leave); CONFLICT when the bot
   * already has a Private computer; LEASE_HELD while either computer is
   * reserved or has an open operation; BOT_BUSY while bots run on either.
   */
  async requestModeChange(input: {
    workspaceId: string;
    botId: string;
    to: BotMode;
    owner: string;
  }): Promise<ComputerOperation> {
    const { workspaceId, botId, to, owner } = parseInput(modeChangeSchema, input, "requestModeChange input");
    const teamId = computerIdFor(workspaceId, botId, "team");
    const privateId = computerIdFor(workspaceId, botId, "private");
    const [from, target] = to === "private" ? [teamId, privateId] : [privateId, teamId];
    if (!(await this.lifecycle.leases.getComputer(from))) {
      throw new AgentComputerError(
        "NOT_FOUND",
        `Bot "${botId}" has no ${to === "private" ? "Team" : "Private"} computer "${from}" to move from.`,
      );
    }
    if (to === "private" && (await this.lifecycle.leases.getComputer(privateId))) {
      throw new AgentComputerError(
        "CONFLICT",
        `Bot "${botId}" already has a Private computer "${privateId}"; move it back to the Team computer or delete it first.`,
        { details: { computerId: privateId } },
      );
    }
    await this.refuseWhileBusy(from, "change the mode on");
    await this.refuseWhileBusy(target, "change the mode on");
    const modeChange = { workspaceId, botId, to, targetComputerId: target };
    return this.store({ computerId: from, kind: "mode-change", owner, warnings: [], modeChange });
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
    // Settled: its worker came back and freed the computer itself; nothing is left to release.
    if (operation.released || operation.settled) return operation;
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
    for (const reservationId of [operation.reservationId, operation.targetReservationId])
      if (reservationId) await this.lifecycle.leases.releaseInterrupted({ id: reservationId, workersStopped: true });
    const now = await this.ledger.now();
    try {
      const released = await this.ledger.updateOperation(id, operation.version, (current) => ({
        ...fieldsOf(current),
        status: "interrupted",
        released: { at: now, by: owner },
        warnings: [...current.warnings, `Released by its owner, who asserted its workers stopped. ${UNSAVED_WORK}`],
      }));
      this.logger.warn("interrupted computer operation released", { id, computerId: released.computerId });
      return released;
    } catch (error) {
      // Its worker settled it in between (or a second release landed first): the computer is free either way.
      const current = AgentComputerError.is(error, "CONFLICT") ? await this.get(id) : undefined;
      if (current?.settled || current?.released) return current;
      throw error;
    }
  }

  /**
   * Whether recovery can be requested now: the computer exists, nothing
   * reserves it and no operation is open on it. False while an interrupted
   * operation's provider calls have not settled (and its owner has not
   * released it): a stale heartbeat alone never makes it true.
   */
  async canRecover(computerId: string): Promise<boolean> {
    const id = parseInput(requestSchema.shape.computerId, computerId, "computerId");
    if (!(await this.lifecycle.leases.getComputer(id))) return false;
    if (await this.lifecycle.leases.getReservation(id)) return false;
    return (await this.ledger.operationIds(id)).open.length === 0;
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
      if (operation?.modeChange) out.add(operation.modeChange.targetComputerId);
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
    await this.refuseWhileBusy(computerId, kind === "update" ? "update" : "recover");
    return this.store({ computerId, kind, owner, warnings: kind === "recovery" ? [UNSAVED_WORK] : [] });
  }

  /**
   * LEASE_HELD while a reservation holds the computer; BOT_BUSY while runs
   * use it, of this process or (by their execution leases) of any other.
   */
  private async refuseWhileBusy(computerId: string, what: string): Promise<void> {
    const reserved = await this.lifecycle.leases.getReservation(computerId);
    if (reserved) {
      throw new AgentComputerError(
        "LEASE_HELD",
        reserved.status === "interrupted"
          ? `Computer "${computerId}" stays reserved for an interrupted ${reserved.purpose} until its provider calls settle or its owner releases it.`
          : `Computer "${computerId}" is reserved for ${reserved.purpose}; retry when it finishes.`,
        { details: { computerId, purpose: reserved.purpose, status: reserved.status } },
      );
    }
    const runs = this.lifecycle.activeRuns(computerId);
    if (runs > 0)
      throw new AgentComputerError("BOT_BUSY", `Stop the bots first: ${runs} run(s) use computer "${computerId}".`);
    await this.lifecycle.refuseWhileBotsRun(computerId, what);
  }

  /** Stores the queued operation (LEASE_HELD when one of its computers has an open one) and publishes it. */
  private async store(
    fields: Pick<ComputerOperation, "computerId" | "kind" | "owner" | "warnings" | "modeChange">,
  ): Promise<ComputerOperation> {
    const operation = await this.ledger.createOperation({
      ...fields,
      id: `op-${randomUUID()}`,
      status: "queued",
      requestedAt: await this.ledger.now(),
      stages: [],
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
