import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { ComputerSpec, DesktopSession, Machine, SandboxProvider } from "@agent-computer/core";
import { AgentComputerError, type Logger, parseInput, silentLogger } from "@agent-computer/core";
import type { ComputerRecord, Lease } from "@agent-computer/leases";
import { LeaseEngine } from "@agent-computer/leases";
import PQueue from "p-queue";
import { z } from "zod";
import { redactSecrets } from "../tools/redact-secrets.js";
import { BotRun, type BotRunHost } from "./bot-run.js";
import type { ComputerEvent } from "./computer-event.js";
import { ComputerOperations } from "./computer-operations.js";
import type { ComputerRuntimeOptions } from "./computer-runtime-options.js";
import type { ComputerSlot } from "./computer-slot.js";
import { DeploymentLedger } from "./deployment-ledger.js";
import { openBotDesktop } from "./open-bot-desktop.js";
import type { OperationHost, StageRunner } from "./operation-host.js";
import { reconcileComputers } from "./reconcile-computers.js";
import type { ReconcileOptions } from "./reconcile-options.js";
import type { ReconcileReport } from "./reconcile-report.js";
import { runtimeSettingsFromEnv } from "./runtime-settings.js";

type StretchEnd = NonNullable<ComputerRecord["runs"][number]["endReason"]>;
const MAX_STRETCH_RECORDS = 50;
/** A machine found alive this recently is handed out without asking the provider again. */
const LIVENESS_MS = 1000;
/** The label that ties a machine to the runtime deployment that made it (what the reconciler lists by). */
export const DEPLOYMENT_LABEL = "agent-computer.deployment";
/** The label that names a machine's computer. */
export const COMPUTER_LABEL = "agent-computer.computer-id";
/** Runs straight through: bring-up records no stages. */
const noStages: StageRunner = (_name, work) => work();

const idSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "letters, digits, _ and -, up to 64");
const startRunSchema = z.object({
  workspaceId: idSchema,
  botId: idSchema,
  /** A Private Computer for this bot instead of the workspace's Team Computer. */
  private: z.boolean().default(false),
  runId: z.string().min(1).max(128).optional(),
});
const deleteBotSchema = z.object({ workspaceId: idSchema, botId: idSchema });
const desktopForSchema = z.object({ computerId: z.string().min(1), botId: z.string().min(1) }).strict();

const takeoverSchema = z.object({
  computerId: z.string().min(1),
  botId: idSchema,
  holder: z.string().min(1).max(256),
  ttlMs: z
    .number()
    .int()
    .positive()
    .max(24 * 3600_000),
});

/**
 * Turns a provider, a state store and a home store into computers for bots:
 * one Team Computer per workspace (bots work in `bots/<bot-id>/`, shared work
 * in `shared/`), or a Private Computer per bot. Computers start on first use,
 * are replaced and restored when their machine is gone, save their home at
 * run boundaries under a fenced checkpoint lease, and suspend when idle.
 */
export class ComputerRuntime implements BotRunHost {
  readonly leases: LeaseEngine;
  readonly leaseTtlMs: number;
  /** Update and recovery of computers, as durable background operations. */
  readonly operations: ComputerOperations;
  /** This runtime's name on the machines it makes (see `ComputerRuntimeOptions.deployment`). */
  readonly deployment: string;
  private readonly ledger: DeploymentLedger;
  /** Computers this process runs an operation on: idle suspension leaves them alone. */
  private readonly operating = new Set<string>();
  /** Computer ids known to be in the deployment's index already. */
  private readonly indexed = new Set<string>();
  private readonly provider: SandboxProvider;
  private readonly homeStore: AgentHomeStore;
  private readonly logger: Logger;
  private readonly clock: () => number;
  private readonly settings: { screenLimit: number; idleMs: number; maxActiveMs: number };
  private readonly spec: ComputerRuntimeOptions["spec"];
  private readonly holder = `runtime-${randomUUID()}`;
  private readonly slots = new Map<string, ComputerSlot>();
  private readonly listeners = new Set<(event: ComputerEvent) => void>();

  constructor(options: ComputerRuntimeOptions) {
    const parsed = parseInput(runtimeOptionsSchema, options, "ComputerRuntimeOptions");
    this.provider = options.provider;
    this.homeStore = options.homeStore;
    this.leases = new LeaseEngine(options.stateStore);
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? Date.now;
    this.spec = options.spec;
    this.leaseTtlMs = parsed.leaseTtlMs;
    const env = runtimeSettingsFromEnv(process.env);
    this.settings = {
      screenLimit: parsed.screenLimit ?? env.screenLimit,
      idleMs: parsed.idleMs ?? env.idleMs,
      maxActiveMs: parsed.maxActiveMs ?? env.maxActiveMs,
    };
    if (options.onEvent) this.listeners.add(options.onEvent);
    this.deployment = parsed.deployment;
    this.ledger = new DeploymentLedger(options.stateStore, this.deployment);
    this.operations = new ComputerOperations(this.operationHost(), this.ledger, {
      logger: this.logger,
      ...options.operations,
    });
  }

  /** Subscribes to lifecycle events; returns the unsubscribe function. */
  on(listener: (event: ComputerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The computer id a bot of a workspace works on. */
  computerIdFor(input: { workspaceId: string; botId: string; private?: boolean }): string {
    const { workspaceId, botId, private: own } = parseInput(startRunSchema, input, "computer address");
    return own ? `private-${workspaceId}-${botId}` : `team-${workspaceId}`;
  }

  /**
   * Starts a run of `botId`. Cheap: the computer starts when the run first
   * calls `machine()`. End it with `run.end("completed" | "failed")`.
   */
  startRun(input: { workspaceId: string; botId: string; private?: boolean; runId?: string }): BotRun {
    const parsed = parseInput(startRunSchema, input, "startRun input");
    const computerId = this.computerIdFor(parsed);
    const slot = this.slotOf(computerId, !parsed.private);
    const run = new BotRun(parsed.runId ?? `run-${randomUUID()}`, parsed.botId, slot, this);
    slot.runs.add(run);
    return run;
  }

  /**
   * A person takes control of a bot's screen. BOT_BUSY ("Stop the bot first")
   * while the bot's run is active here or its execution lease is live,
   * unless the run waits for a takeover.
   */
  async takeover(input: { computerId: string; botId: string; holder: string; ttlMs: number }): Promise<Lease> {
    const parsed = parseInput(takeoverSchema, input, "takeover input");
    const slot = this.slotOf(parsed.computerId, true);
    const run = [...slot.runs].find((r) => r.botId === parsed.botId);
    const lease = await this.leases.takeover({ ...parsed, run: run?.state ?? "idle" });
    slot.takeovers.add(lease);
    this.touch(slot);
    this.emit("takeover-started", slot, performance.now(), { botId: parsed.botId });
    return lease;
  }

  /**
   * A bot's desktop on an existing computer, for a person's screen or
   * terminal: starts (or reconnects, or replaces) the computer and the
   * bot's desktop when needed. NOT_FOUND for a computer never made;
   * UNSUPPORTED where the provider has no desktop.
   */
  async desktopFor(input: { computerId: string; botId: string }): Promise<DesktopSession> {
    const { computerId, botId } = parseInput(desktopForSchema, input, "desktopFor input");
    if (!(await this.leases.getComputer(computerId)))
      throw new AgentComputerError("NOT_FOUND", `Computer "${computerId}" does not exist; a bot's run makes it.`);
    const slot = this.slotOf(computerId, !computerId.startsWith("private-"));
    const machine = await this.ensureMachine(slot);
    this.touch(slot);
    return openBotDesktop(machine, botId);
  }

  /** Ends a takeover; a checkpoint deferred for it is taken now. */
  async releaseTakeover(lease: Lease): Promise<void> {
    await this.leases.release(lease);
    const slot = lease.computerId === undefined ? undefined : this.slots.get(lease.computerId);
    if (!slot) return;
    // A person just used the screen: that counts as activity.
    this.touch(slot);
    for (const held of slot.takeovers)
      if (held.token === lease.token && held.key === lease.key) slot.takeovers.delete(held);
    if (lease.botId !== undefined) this.emit("takeover-ended", slot, performance.now(), { botId: lease.botId });
    // The bot that asked for help resumes.
    for (const run of slot.runs) if (run.botId === lease.botId && run.state === "waiting_takeover") run.takeoverEnded();
    if (slot.checkpointPending && slot.runs.size === 0 && slot.takeovers.size === 0)
      await this.checkpoint(slot, "takeover-ended");
  }

  /** Saves the home, then stops the computer. BOT_BUSY while runs use it. */
  async stopComputer(computerId: string): Promise<void> {
    const slot = this.slotOf(parseInput(z.string().min(1), computerId, "computerId"), true);
    if (slot.runs.size > 0) {
      throw new AgentComputerError(
        "BOT_BUSY",
        `Stop the bots first: ${slot.runs.size} run(s) use computer "${computerId}".`,
      );
    }
    await this.refuseIfReserved(slot.computerId, "stop");
    await this.suspend(slot, "stopped");
  }

  /**
   * Suspends computers idle for `idleMs`, and, on providers that bill while
   * running, those up for `maxActiveMs` in one stretch. A run executing or a
   * person in control keeps a computer up. Returns the suspended ids.
   */
  async suspendIdle(): Promise<string[]> {
    const now = this.clock();
    const suspended: string[] = [];
    for (const slot of this.slots.values()) {
      if (!slot.machine || slot.runs.size > 0 || slot.takeovers.size > 0) continue;
      // An update or recovery holds the computer: it is not idle, it is being repaired.
      if (this.operating.has(slot.computerId) || (await this.leases.getReservation(slot.computerId))) continue;
      const { idleMs, maxActiveMs } = this.settings;
      if (idleMs > 0 && now - slot.lastActivityAt >= idleMs) {
        await this.suspend(slot, "idle");
        suspended.push(slot.computerId);
      } else if (
        this.provider.capabilities.billsWhileRunning &&
        maxActiveMs > 0 &&
        slot.stretchStartedAt !== undefined &&
        now - slot.stretchStartedAt >= maxActiveMs
      ) {
        await this.suspend(slot, "active_limit");
        suspended.push(slot.computerId);
      }
    }
    return suspended;
  }

  /**
   * Deletes a bot: its folder `bots/<bot-id>` and browser profile
   * `.browser-profiles/<bot-id>` on the workspace's Team Computer (saved
   * at once, so a later restore does not bring them back), and its Private
   * Computer if it has one. BOT_BUSY while the bot runs. Run history is
   * the app's: keep it and clear the bot there.
   */
  async deleteBot(input: { workspaceId: string; botId: string }): Promise<{ privateComputerDeleted: boolean }> {
    const { workspaceId, botId } = parseInput(deleteBotSchema, input, "deleteBot input");
    const teamId = this.computerIdFor({ workspaceId, botId });
    if (await this.leases.getComputer(teamId)) {
      const slot = this.slotOf(teamId, true);
      if ([...slot.runs].some((run) => run.botId === botId))
        throw new AgentComputerError("BOT_BUSY", `Stop bot "${botId}" first: it runs on computer "${teamId}".`);
      // The bot's execution lease keeps any other process from driving it while its files go.
      let lease: Lease;
      try {
        lease = await this.leases.acquireExecution({
          computerId: teamId,
          botId,
          holder: `bot-deletion-${randomUUID()}`,
          ttlMs: this.leaseTtlMs,
        });
      } catch (error) {
        if (!AgentComputerError.is(error, "LEASE_HELD") || (await this.leases.getReservation(teamId))) throw error;
        throw new AgentComputerError("BOT_BUSY", `Stop bot "${botId}" first: a run drives it on "${teamId}".`, {
          cause: error,
        });
      }
      try {
        const machine = this.leases.fenced(await this.ensureMachine(slot), lease);
        const removed = await machine.exec({
          argv: ["rm", "-rf", "--", `bots/${botId}`, `.browser-profiles/${botId}`],
        });
        if (removed.exitCode !== 0) {
          throw new AgentComputerError("UNAVAILABLE", `Could not remove bot "${botId}"'s files on "${teamId}".`, {
            details: { exitCode: removed.exitCode },
          });
        }
        await this.checkpoint(slot, "bot-deleted");
      } finally {
        await this.leases.release(lease).catch(() => {});
      }
    }
    const privateId = this.computerIdFor({ workspaceId, botId, private: true });
    const privateComputerDeleted = await this.deleteComputer(privateId);
    return { privateComputerDeleted };
  }

  /**
   * Deletes a computer for good: destroys its machine, closes its stretch
   * as `deleted`, deletes its record and its home (`homeStore.delete`).
   * Runs under a computer-wide reservation: LEASE_HELD while an operation
   * holds the computer, BOT_BUSY while runs of this process use it.
   * Returns false when there was no such computer.
   */
  async deleteComputer(computerId: string): Promise<boolean> {
    const id = parseInput(z.string().min(1).max(256), computerId, "computerId");
    const record = await this.leases.getComputer(id);
    if (!record) return false;
    const slot = this.slotOf(id, id.startsWith("team-"));
    if (slot.runs.size > 0)
      throw new AgentComputerError("BOT_BUSY", `Stop the bots first: ${slot.runs.size} run(s) use computer "${id}".`);
    // "stop" is the closest purpose the lease engine has: deletion stops the computer for good.
    const reservation = await this.leases.reserve({
      computerId: id,
      holder: `deletion-${randomUUID()}`,
      purpose: "stop",
    });
    try {
      await slot.lifecycle.add(async () => {
        const current = (await this.leases.getComputer(id)) ?? record;
        const machine = await this.machineOf(slot, current);
        await machine?.destroy();
        slot.machine = undefined;
        await this.closeStretch(id, "deleted");
        const last = await this.leases.getComputer(id);
        if (last) await this.leases.deleteComputer({ computerId: id, expectedVersion: last.version });
        // After the record: a crash here leaves a home no record owns (object stores' reconciler removes those).
        await this.homeStore.delete(current.homeKey);
        await this.ledger.removeComputer(id);
        this.indexed.delete(id);
      });
    } finally {
      await this.leases.release(reservation).catch(() => {});
    }
    this.slots.delete(id);
    return true;
  }

  /**
   * One reconciler pass over this deployment (see `reconcileComputers`):
   * marks interrupted operations, republishes missed enqueues, destroys
   * orphan machines after `orphanGraceMs`, and closes the open stretch of
   * records whose machine is gone as `reconciled`. Run it periodically.
   */
  async reconcile(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    return reconcileComputers(
      {
        provider: this.provider,
        leases: this.leases,
        ledger: this.ledger,
        operations: this.operations,
        deploymentLabels: { [DEPLOYMENT_LABEL]: this.deployment },
        computerLabel: COMPUTER_LABEL,
        forgetGoneMachine: (record) => this.forgetGoneMachine(record),
      },
      options,
    );
  }

  /** @internal Used by runs: the computer's machine, started, reconnected or replaced. */
  async ensureMachine(slot: ComputerSlot, options: { verify?: boolean } = {}): Promise<Machine> {
    return (await slot.lifecycle.add(async () => {
      const recent = performance.now() - slot.checkedAt < LIVENESS_MS;
      if (slot.machine && recent && !options.verify) return slot.machine;
      // Nothing starts, reconnects or replaces a computer another process is repairing.
      await this.refuseIfReserved(slot.computerId, "start");
      return this.bringUp(slot);
    })) as Machine;
  }

  /** @internal */
  takeoverRequested(slot: ComputerSlot, run: BotRun, reason: string): void {
    // The reason is the model's own words: it may quote a secret.
    this.emit("takeover-requested", slot, performance.now(), {
      botId: run.botId,
      reason: redactSecrets(reason).slice(0, 500),
    });
  }

  /** @internal */
  screenHeld(slot: ComputerSlot, botId: string): boolean {
    return [...slot.takeovers].some((lease) => lease.botId === botId);
  }

  /** What the provider's computers can do; tools offer themselves by it. */
  get capabilities(): SandboxProvider["capabilities"] {
    return this.provider.capabilities;
  }

  /** @internal */
  touch(slot: ComputerSlot): void {
    slot.lastActivityAt = this.clock();
  }

  /** @internal A run ended: save now, or defer while other bots or people still work. */
  async runEnded(slot: ComputerSlot, run: BotRun, outcome: "completed" | "failed"): Promise<void> {
    slot.runs.delete(run);
    this.touch(slot);
    if (!slot.machine) return;
    if (slot.runs.size > 0 || slot.takeovers.size > 0) {
      slot.checkpointPending = true;
      this.emit("checkpoint-deferred", slot, performance.now(), {
        botId: run.botId,
        waitingFor: slot.runs.size + slot.takeovers.size,
      });
      return;
    }
    await this.checkpoint(slot, `run-${outcome}`);
  }

  private operationHost(): OperationHost {
    return {
      leases: this.leases,
      providerKind: this.provider.kind,
      underOperation: async (computerId, work) => {
        const slot = this.slotOf(computerId, computerId.startsWith("team-"));
        this.operating.add(computerId);
        try {
          return (await slot.lifecycle.add(() => work(slot))) as Awaited<ReturnType<typeof work>>;
        } finally {
          this.operating.delete(computerId);
        }
      },
      activeRuns: (computerId) => this.slots.get(computerId)?.runs.size ?? 0,
      currentMachine: (slot, record) => this.machineOf(slot, record),
      checkpointLive: async (slot, machine, reason) => {
        slot.machine = machine;
        await this.checkpointNow(slot, reason);
        return (await this.leases.getComputer(slot.computerId))?.revision ?? 0;
      },
      replaceMachine: (slot, record, stage) => this.replace(slot, record, "replaced", stage),
    };
  }

  /** The machine behind the record's ref (this process's handle when it has one); undefined when gone. */
  private async machineOf(slot: ComputerSlot, record: ComputerRecord): Promise<Machine | undefined> {
    if (record.providerRef === null || record.providerKind !== this.provider.kind) return undefined;
    if (slot.machine?.ref === record.providerRef) return slot.machine;
    const found = await this.provider.reconnect(record.providerRef as `${string}:${string}`);
    return found === "gone" ? undefined : found;
  }

  /** The reconciler found the record's machine gone: forget its ref and close the stretch. */
  private async forgetGoneMachine(record: ComputerRecord): Promise<void> {
    const runs = [...record.runs];
    const last = runs.at(-1);
    if (last && last.endedAt === undefined)
      runs[runs.length - 1] = { ...last, endedAt: this.clock(), endReason: "reconciled" };
    await this.leases.updateComputer({
      computerId: record.computerId,
      expectedVersion: record.version,
      changes: { providerRef: null, runs },
    });
    const slot = this.slots.get(record.computerId);
    if (slot?.machine?.ref === record.providerRef) {
      slot.machine = undefined;
      slot.stretchStartedAt = undefined;
    }
  }

  private async refuseIfReserved(computerId: string, what: string): Promise<void> {
    const reserved = await this.leases.getReservation(computerId);
    if (!reserved) return;
    throw new AgentComputerError(
      "LEASE_HELD",
      reserved.status === "interrupted"
        ? `Cannot ${what} computer "${computerId}": it stays reserved for an interrupted ${reserved.purpose} until its owner releases it (releaseInterrupted with workersStopped: true).`
        : `Cannot ${what} computer "${computerId}": it is reserved for ${reserved.purpose}; retry when that finishes.`,
      { details: { computerId, purpose: reserved.purpose, status: reserved.status, id: reserved.id } },
    );
  }

  private slotOf(computerId: string, team: boolean): ComputerSlot {
    let slot = this.slots.get(computerId);
    if (!slot) {
      slot = {
        computerId,
        homeKey: computerId,
        team,
        machine: undefined,
        checkedAt: 0,
        lifecycle: new PQueue({ concurrency: 1 }),
        runs: new Set(),
        takeovers: new Set(),
        checkpointPending: false,
        lastActivityAt: this.clock(),
        stretchStartedAt: undefined,
      };
      this.slots.set(computerId, slot);
    }
    return slot;
  }

  /** Reconnects by the record's ref, or provisions a replacement and restores the home into it first. */
  private async bringUp(slot: ComputerSlot): Promise<Machine> {
    let record = await this.recordOf(slot);
    let previousEnd: StretchEnd | undefined;
    if (record.providerRef !== null) {
      if (record.providerKind === this.provider.kind) {
        const started = performance.now();
        const found = await this.provider.reconnect(record.providerRef as `${string}:${string}`);
        if (found !== "gone") {
          const known = slot.machine?.ref === found.ref;
          record = await this.openStretch(record, found.ref, undefined);
          if (known) {
            slot.machine = found;
            slot.checkedAt = performance.now();
            return found;
          }
          return this.ready(slot, found, started, "reconnected");
        }
        slot.machine = undefined;
        previousEnd = "gone";
      } else previousEnd = "replaced";
    }

    return this.replace(slot, record, previousEnd, noStages);
  }

  /**
   * Provisions a machine with the configured provider and image, restores
   * the latest checkpoint into it and switches the record to it. Bring-up
   * and the update and recovery operations share this path.
   */
  private async replace(
    slot: ComputerSlot,
    record: ComputerRecord,
    previousEnd: StretchEnd | undefined,
    stage: StageRunner,
  ): Promise<Machine> {
    const started = performance.now();
    const machine = await stage("provisioning", () => this.provider.provision(this.specFor(slot)));
    this.emit("provisioning", slot, started, { providerKind: this.provider.kind });
    try {
      const restoring = performance.now();
      const restored = await stage("restoring", async () => {
        const latest = await this.homeStore.restore({
          homeKey: slot.homeKey,
          target: this.provider.capabilities.mountedHome ? { mounted: true } : { machine },
          committedRevision: record.revision,
        });
        return { revision: latest?.revision ?? 0 };
      });
      if (restored.revision > 0) this.emit("restoring", slot, restoring, { revision: restored.revision });
      await stage("switching", async () => {
        await this.openStretch(record, machine.ref, previousEnd);
        return { fromKind: record.providerKind, toKind: this.provider.kind };
      });
    } catch (error) {
      // Nothing may use a machine whose home was not restored.
      await machine.destroy().catch(() => {});
      throw error;
    }
    if (previousEnd) this.emit("replaced", slot, started, { reason: previousEnd });
    return this.ready(slot, machine, started, previousEnd ? "replaced" : "provisioned");
  }

  private ready(slot: ComputerSlot, machine: Machine, started: number, how: string): Machine {
    slot.machine = machine;
    slot.checkedAt = performance.now();
    slot.stretchStartedAt ??= this.clock();
    this.touch(slot);
    this.emit("ready", slot, started, { how });
    return machine;
  }

  private async recordOf(slot: ComputerSlot): Promise<ComputerRecord> {
    // Indexed before the record exists, so the reconciler can find every record this deployment made.
    if (!this.indexed.has(slot.computerId)) {
      await this.ledger.addComputer(slot.computerId);
      this.indexed.add(slot.computerId);
    }
    const existing = await this.leases.getComputer(slot.computerId);
    if (existing) return existing;
    try {
      return await this.leases.createComputer({
        computerId: slot.computerId,
        providerKind: this.provider.kind,
        providerRef: null,
        homeKey: slot.homeKey,
        storageId: slot.homeKey,
      });
    } catch (error) {
      // Another process created it first: use theirs.
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      return (await this.leases.getComputer(slot.computerId)) as ComputerRecord;
    }
  }

  /** Records the machine's ref, closing a stretch that ended with `previousEnd` and opening a new one. */
  private async openStretch(
    record: ComputerRecord,
    ref: string,
    previousEnd: StretchEnd | undefined,
  ): Promise<ComputerRecord> {
    const runs = [...record.runs];
    const last = runs.at(-1);
    if (last && last.endedAt === undefined) {
      if (!previousEnd && record.providerRef === ref) return record; // still the same stretch
      runs[runs.length - 1] = { ...last, endedAt: this.clock(), endReason: previousEnd ?? "replaced" };
    }
    runs.push({ runId: `stretch-${randomUUID()}`, startedAt: this.clock() });
    return this.leases.updateComputer({
      computerId: record.computerId,
      expectedVersion: record.version,
      changes: { providerKind: this.provider.kind, providerRef: ref, runs: runs.slice(-MAX_STRETCH_RECORDS) },
    });
  }

  private async closeStretch(computerId: string, reason: StretchEnd): Promise<void> {
    const record = await this.leases.getComputer(computerId);
    const last = record?.runs.at(-1);
    if (!record || !last || last.endedAt !== undefined) return;
    const runs = [...record.runs.slice(0, -1), { ...last, endedAt: this.clock(), endReason: reason }];
    await this.leases.updateComputer({ computerId, expectedVersion: record.version, changes: { runs } });
  }

  private specFor(slot: ComputerSlot): ComputerSpec {
    return {
      computerId: slot.computerId,
      homeKey: slot.homeKey,
      ...(this.spec?.image ? { image: this.spec.image } : {}),
      ...(this.spec?.resources ? { resources: this.spec.resources } : {}),
      screenLimit: slot.team ? this.settings.screenLimit : 0,
      labels: { ...this.spec?.labels, [DEPLOYMENT_LABEL]: this.deployment, [COMPUTER_LABEL]: slot.computerId },
    };
  }

  /** Saves the home under the checkpoint lease, through the lifecycle queue. */
  private checkpoint(slot: ComputerSlot, reason: string): Promise<void> {
    return slot.lifecycle.add(() => this.checkpointNow(slot, reason)) as Promise<void>;
  }

  private async checkpointNow(slot: ComputerSlot, reason: string): Promise<void> {
    const machine = slot.machine;
    if (!machine) return;
    const started = performance.now();
    let lease = await this.leases.acquireCheckpoint({
      computerId: slot.computerId,
      holder: this.holder,
      ttlMs: this.leaseTtlMs,
    });
    const heartbeat = setInterval(async () => {
      lease = await this.leases.renew(lease).catch(() => lease);
    }, this.leaseTtlMs / 3);
    heartbeat.unref?.();
    try {
      const record = (await this.leases.getComputer(slot.computerId)) as ComputerRecord;
      const mounted = this.provider.capabilities.mountedHome;
      // A remote export must see consistent browser profiles.
      const resume = !mounted && machine.quiesceDesktops ? await machine.quiesceDesktops() : undefined;
      try {
        const saved = await this.homeStore.checkpoint({
          homeKey: slot.homeKey,
          source: mounted ? { mounted: true } : { machine },
          committedRevision: record.revision,
          commit: async (next) => {
            await this.leases.commitRevision({
              computerId: slot.computerId,
              lease,
              expectedRevision: record.revision,
              next,
            });
          },
        });
        slot.checkpointPending = false;
        this.emit("checkpointing", slot, started, { reason, revision: saved.revision, mounted: saved.mounted });
      } finally {
        await resume?.();
      }
    } finally {
      clearInterval(heartbeat);
      await this.leases.release(lease).catch(() => {});
    }
  }

  /** Claims the computer, saves the home, stops the machine and closes the stretch. */
  private async suspend(slot: ComputerSlot, reason: "idle" | "active_limit" | "stopped"): Promise<void> {
    await slot.lifecycle.add(async () => {
      const machine = slot.machine;
      if (!machine) return;
      const started = performance.now();
      const reservation = await this.leases.reserve({
        computerId: slot.computerId,
        holder: this.holder,
        purpose: reason === "stopped" ? "stop" : "idle-suspension",
      });
      try {
        await this.checkpointNow(slot, reason === "stopped" ? "stop" : reason);
        await machine.stop();
        slot.machine = undefined;
        slot.stretchStartedAt = undefined;
        await this.closeStretch(slot.computerId, reason);
        this.emit("suspending", slot, started, { reason });
      } finally {
        await this.leases.release(reservation).catch(() => {});
      }
    });
  }

  private emit(
    type: ComputerEvent["type"],
    slot: ComputerSlot,
    started: number,
    detail: ComputerEvent["detail"],
  ): void {
    const event: ComputerEvent = {
      type,
      computerId: slot.computerId,
      at: this.clock(),
      durationMs: Math.round(performance.now() - started),
      detail,
    };
    this.logger.info(`computer ${type}`, { computerId: slot.computerId, durationMs: event.durationMs, ...detail });
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.warn("a computer event listener threw", { error: String(error) });
      }
    }
  }
}

const runtimeOptionsSchema = z.object({
  provider: z.custom<SandboxProvider>(
    (v) => typeof v === "object" && v !== null && (v as SandboxProvider).specificationVersion === "v1",
    { message: 'expected a SandboxProvider with specificationVersion "v1"' },
  ),
  stateStore: z.custom(
    (v) => typeof v === "object" && v !== null && typeof (v as { commit?: unknown }).commit === "function",
    {
      message: "expected a StateStore",
    },
  ),
  homeStore: z.custom<AgentHomeStore>(
    (v) => typeof v === "object" && v !== null && typeof (v as AgentHomeStore).checkpoint === "function",
    { message: "expected an AgentHomeStore" },
  ),
  screenLimit: z.number().int().nonnegative().optional(),
  idleMs: z.number().int().nonnegative().optional(),
  maxActiveMs: z.number().int().nonnegative().optional(),
  leaseTtlMs: z.number().int().min(100).default(60_000),
  deployment: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "letters, digits, . _ and -, up to 63")
    .default("default"),
  operations: z.object({}).passthrough().optional(),
  clock: z.custom<() => number>((v) => typeof v === "function", { message: "expected a function" }).optional(),
  onEvent: z.custom((v) => typeof v === "function", { message: "expected a function" }).optional(),
});

/** Builds a `ComputerRuntime`; see its doc comment. */
export function createComputerRuntime(options: ComputerRuntimeOptions): ComputerRuntime {
  return new ComputerRuntime(options);
}
