import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { AgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef, SandboxProvider } from "@agent-computer/core";
import { AgentComputerError, COMPUTER_LABELS, labelValueOf } from "@agent-computer/core";
import type { ComputerOwner, ComputerRecord, ComputerScope, LeaseEngine } from "@agent-computer/leases";
import PQueue from "p-queue";
import type { BotRun } from "./bot-run.js";
import type { BrowserProxyResolver } from "./browser-proxy.js";
import type { ComputerActivities, ComputerActivity } from "./computer-activity.js";
import type { ComputerEvents } from "./computer-events.js";
import { createRecord, withScope } from "./computer-record-of.js";
import type { ComputerRuntimeOptions } from "./computer-runtime-options.js";
import type { ComputerSlot } from "./computer-slot.js";
import { computerSpecFor, type MachineDefaults } from "./computer-spec-for.js";
import { ComputerStretches, openStretchId, type StretchEnd } from "./computer-stretches.js";
import type { DeploymentLedger } from "./deployment-ledger.js";
import { checkpointHome, type HomeCheckpointParts, restoreLatestHome } from "./home-checkpoint.js";
import { KeptScreens } from "./kept-screens.js";
import type { RunRecords } from "./run-records.js";
import type { RuntimeSettings } from "./runtime-settings.js";
import type { StageRunner } from "./stage-runner.js";
import { backgroundWorkOf, isRunning, jobsHolding, suspensionReason } from "./suspension-rules.js";

/** A process writes a computer's use to the shared activity at most this often: idle is minutes, not seconds. */
const ACTIVITY_WRITE_MS = 10_000;
/** A machine found alive this recently is handed out without asking the provider again. */
const LIVENESS_MS = 1000;
/** Runs straight through: bring-up outside an operation records no stages. */
const noStages: StageRunner = (_name, work) => work();

/** What a lifecycle is built from; `ComputerRuntime` makes one from its options. */
export interface ComputerLifecycleParts {
  readonly provider: SandboxProvider;
  readonly homeStore: AgentHomeStore;
  readonly leases: LeaseEngine;
  readonly ledger: DeploymentLedger;
  readonly runRecords: RunRecords;
  readonly activities: ComputerActivities;
  readonly events: ComputerEvents;
  readonly clock: () => number;
  readonly leaseTtlMs: number;
  /** Names this runtime's machines (`COMPUTER_LABELS.deployment`). */
  readonly deployment: string;
  readonly spec: ComputerRuntimeOptions["spec"];
  readonly egressFor?: ComputerRuntimeOptions["egressFor"];
  readonly settings: RuntimeSettings & { readonly backgroundWorkHolds: boolean };
  readonly browserProxy?: BrowserProxyResolver;
}

/**
 * The lifecycle of the computers one runtime process serves: bring up
 * (reconnect, or provision a replacement and restore the home into it),
 * checkpoint under the fenced checkpoint lease, suspend, and remove. Each
 * computer's steps run one at a time in its slot's queue. `ComputerRuntime`
 * is the public front; runs (`BotRun`), operations (`ComputerOperations`)
 * and the reconciler use this directly. Not for app code.
 */
export class ComputerLifecycle {
  readonly provider: SandboxProvider;
  readonly leases: LeaseEngine;
  readonly ledger: DeploymentLedger;
  readonly events: ComputerEvents;
  readonly leaseTtlMs: number;
  readonly activities: ComputerActivities;
  private readonly stretches: ComputerStretches;
  private readonly slots = new Map<string, ComputerSlot>();
  /** Computers this process runs an operation on: idle suspension leaves them alone. */
  private readonly operating = new Set<string>();
  /** Computer ids known to be in the deployment's index already. */
  private readonly indexed = new Set<string>();
  /** This process, as the holder of checkpoint leases and reservations. */
  private readonly holder = `runtime-${randomUUID()}`;
  /** Screens runs kept between runs (kept-screens.ts). */
  readonly screens: KeptScreens;

  constructor(private readonly parts: ComputerLifecycleParts) {
    this.provider = parts.provider;
    this.leases = parts.leases;
    this.ledger = parts.ledger;
    this.events = parts.events;
    this.leaseTtlMs = parts.leaseTtlMs;
    this.activities = parts.activities;
    // A provider whose running time is not counted (the app's own host) keeps its stretches in the records only.
    const runRecords = parts.provider.capabilities.recordsRunTime === false ? undefined : parts.runRecords;
    this.stretches = new ComputerStretches(parts.leases, parts.clock, runRecords);
    this.screens = new KeptScreens(
      parts.activities,
      parts.clock,
      (id, activity) => this.holdsOf(id, activity),
      parts.browserProxy,
    );
  }

  get providerKind(): string {
    return this.provider.kind;
  }

  /** The labels every machine of this deployment carries; the reconciler lists by them. */
  get deploymentLabels(): Record<string, string> {
    return { [COMPUTER_LABELS.deployment]: labelValueOf(this.parts.deployment) };
  }

  /**
   * This process's slot for a computer, made on first use. `scope` is what
   * a run says the computer is; it fills a record that has no scope yet.
   */
  slotOf(computerId: string, scope?: ComputerScope, owner?: ComputerOwner): ComputerSlot {
    const slot = this.slots.get(computerId) ?? this.newSlot(computerId);
    slot.scope ??= scope;
    slot.owner ??= owner;
    return slot;
  }

  /** The slot, if this process has one for the computer. */
  knownSlot(computerId: string): ComputerSlot | undefined {
    return this.slots.get(computerId);
  }

  /** Runs of this process that use the computer now. */
  activeRuns(computerId: string): number {
    return this.slots.get(computerId)?.runs.size ?? 0;
  }

  /** The runtime's clock. */
  now = (): number => this.parts.clock();

  /**
   * A run or a person just used the computer: that counts as activity, for
   * every worker (written to the shared activity at most every 10 s).
   */
  async touch(slot: ComputerSlot, at?: number): Promise<void> {
    const now = at ?? this.parts.clock();
    slot.lastActivityAt = now;
    if (now - slot.activityWrittenAt < ACTIVITY_WRITE_MS) return;
    slot.activityWrittenAt = now;
    await this.activities.update(slot.computerId, (a) => ({ ...a, lastActivityAt: Math.max(a.lastActivityAt, now) }));
  }

  /**
   * Puts the bot in the computer's shared activity before its run takes
   * the execution lease, so a worker deciding on the computer finds the lease.
   */
  async noteBot(slot: ComputerSlot, botId: string): Promise<void> {
    if (slot.knownBots.has(botId)) return;
    await this.activities.update(slot.computerId, (a) =>
      a.bots.includes(botId) ? a : { ...a, bots: [...a.bots, botId] },
    );
    slot.knownBots.add(botId);
  }

  /** Records for every worker that `botId`'s run waits for a takeover since `at` (or no longer, with undefined). */
  async setWaiting(slot: ComputerSlot, botId: string, at: number | undefined): Promise<void> {
    await this.activities.update(slot.computerId, (a) => {
      const { [botId]: _previous, ...waiting } = a.waiting;
      return at === undefined
        ? { ...a, waiting }
        : { ...a, waiting: { ...waiting, [botId]: at }, lastActivityAt: Math.max(a.lastActivityAt, at) };
    });
  }

  /** Which bots hold a live execution or user-control lease on the computer, on any worker. */
  async holdsOf(computerId: string, activity?: ComputerActivity) {
    const current = activity ?? (await this.activities.get(computerId));
    return this.leases.botHolds(computerId, current?.bots ?? []);
  }

  /** Whether a person controls this bot's screen through this runtime now. */
  screenHeld(slot: ComputerSlot, botId: string): boolean {
    return [...slot.takeovers].some((lease) => lease.botId === botId);
  }

  /**
   * The computer's machine, started, reconnected or replaced. A machine seen
   * alive within the last second is handed out as it is, unless `verify`;
   * after that the provider is asked again, and the object is kept while it
   * answers the same machine in the same stretch (`bringUp`).
   * LEASE_HELD while an operation or a stop holds the computer.
   */
  async ensure(slot: ComputerSlot, options: { verify?: boolean } = {}): Promise<Machine> {
    return (await slot.lifecycle.add(async () => {
      const recent = performance.now() - slot.checkedAt < LIVENESS_MS;
      if (slot.machine && recent && !options.verify) return slot.machine;
      // Nothing starts, reconnects or replaces a computer another process is repairing.
      await this.refuseIfReserved(slot.computerId, "start");
      return this.bringUp(slot);
    })) as Machine;
  }

  /** BOT_BUSY while a bot's run drives the computer on any worker (its execution lease is live). */
  async refuseWhileBotsRun(computerId: string, what: string): Promise<void> {
    const { executing } = await this.holdsOf(computerId);
    if (executing.length === 0) return;
    throw new AgentComputerError(
      "BOT_BUSY",
      `Stop the bots first: cannot ${what} computer "${computerId}" while ${executing.length} bot(s) run on it.`,
      { details: { computerId, bots: [...executing] } },
    );
  }

  /** LEASE_HELD, saying why and until when, while a reservation holds the computer. */
  async refuseIfReserved(computerId: string, what: string): Promise<void> {
    const reserved = await this.leases.getReservation(computerId);
    if (!reserved) return;
    throw new AgentComputerError(
      "LEASE_HELD",
      reserved.status === "interrupted"
        ? `Cannot ${what} computer "${computerId}": it stays reserved for an interrupted ${reserved.purpose} until its worker's provider calls settle, or its owner releases it (releaseInterrupted with workersStopped: true).`
        : `Cannot ${what} computer "${computerId}": it is reserved for ${reserved.purpose}; retry when that finishes.`,
      { details: { computerId, purpose: reserved.purpose, status: reserved.status, id: reserved.id } },
    );
  }

  /** The machine behind the record's ref (this process's handle when it has one); undefined when gone. Never provisions. */
  async currentMachine(slot: ComputerSlot, record: ComputerRecord): Promise<Machine | undefined> {
    if (record.providerRef === null || record.providerKind !== this.providerKind) return undefined;
    if (slot.machine?.ref === record.providerRef) return slot.machine;
    const found = await this.provider.reconnect(record.providerRef as ProviderRef);
    return found === "gone" ? undefined : found;
  }

  /**
   * Provisions a machine with the configured provider and image, restores
   * the last saved home into it and switches `record` to it, closing the open
   * stretch as `replaced`. On failure the new machine is destroyed and the
   * record is untouched. For update and recovery, inside `underOperation`.
   */
  replaceMachine(slot: ComputerSlot, record: ComputerRecord, stage: StageRunner): Promise<Machine> {
    return this.replace(slot, record, "replaced", stage);
  }

  /** Runs `work` in the computer's queue; idle suspension leaves the computer alone meanwhile. */
  async underOperation<T>(computerId: string, work: (slot: ComputerSlot) => Promise<T>): Promise<T> {
    const slot = this.slotOf(computerId);
    this.operating.add(computerId);
    try {
      return (await slot.lifecycle.add(() => work(slot))) as T;
    } finally {
      this.operating.delete(computerId);
    }
  }

  /** Saves the home under the checkpoint lease, through the computer's queue. */
  checkpoint(slot: ComputerSlot, reason: string): Promise<void> {
    return slot.lifecycle.add(() => this.checkpointNow(slot, reason)) as Promise<void>;
  }

  /** Saves `machine`'s live home now (an operation already holds the queue); returns the saved revision. */
  async checkpointLive(slot: ComputerSlot, machine: Machine, reason: string): Promise<number> {
    this.hold(slot, machine);
    await this.checkpointNow(slot, reason);
    return (await this.leases.getComputer(slot.computerId))?.revision ?? 0;
  }

  /**
   * A run ended (its lease already released): save now, or defer while
   * other bots or people still hold the computer on any worker, by their
   * leases in the store; the last one to finish saves.
   */
  async runEnded(slot: ComputerSlot, run: BotRun, outcome: "completed" | "failed"): Promise<void> {
    slot.runs.delete(run);
    if (!run.usedComputer) return;
    await this.setWaiting(slot, run.botId, undefined);
    await this.touch(slot);
    await this.saveUnlessHeld(slot, `run-${outcome}`, run.botId);
  }

  /**
   * Saves the home unless a bot or a person still holds the computer on some
   * worker; then the save is left pending in the shared activity for the
   * last one to finish. Returns whether it saved.
   */
  async saveUnlessHeld(slot: ComputerSlot, reason: string, botId?: string): Promise<boolean> {
    const holds = await this.holdsOf(slot.computerId);
    const waitingFor = holds.executing.length + holds.controlled.length;
    if (waitingFor > 0) {
      await this.activities.update(slot.computerId, (a) => ({ ...a, checkpointPending: true }));
      this.events.emit("checkpoint-deferred", slot.computerId, performance.now(), {
        ...(botId === undefined ? {} : { botId }),
        waitingFor,
      });
      return false;
    }
    await this.checkpoint(slot, reason);
    return true;
  }

  /** Whether a save was deferred for the last one to finish (on any worker). */
  async checkpointPending(computerId: string): Promise<boolean> {
    return (await this.activities.get(computerId))?.checkpointPending ?? false;
  }

  /**
   * Claims the computer (a reservation: no bot on any worker starts
   * meanwhile), then, for idle and active-limit suspension, looks again
   * at every worker's leases and gives up if a bot executes or a person
   * controls a screen (a run waiting for a takeover may be suspended under;
   * `suspensionDue` decided that). Then saves the home, stops the machine
   * and closes the stretch with `reason`. Returns whether it suspended.
   */
  async suspend(slot: ComputerSlot, reason: "idle" | "active_limit" | "stopped"): Promise<boolean> {
    return (await slot.lifecycle.add(async () => {
      const started = performance.now();
      const reservation = await this.leases.reserve({
        computerId: slot.computerId,
        holder: this.holder,
        purpose: reason === "stopped" ? "stop" : "idle-suspension",
      });
      try {
        if (reason !== "stopped" && (await this.heldAgainstSuspension(slot.computerId))) return false;
        const record = await this.leases.getComputer(slot.computerId);
        const machine = record ? await this.currentMachine(slot, record) : undefined;
        if (!machine || !record || !isRunning(record)) return false;
        this.hold(slot, machine);
        const scan = reason === "idle" ? await backgroundWorkOf(machine, this.parts.settings) : undefined;
        const jobs = jobsHolding(scan);
        if (jobs) {
          await this.noteUseNow(slot);
          this.events.emit("suspension-deferred", slot.computerId, started, { reason: "background-work", jobs });
          return false;
        }
        await this.checkpointNow(slot, reason === "stopped" ? "stop" : reason);
        await machine.stop();
        this.machineStopped(slot);
        // Screens do not outlive their machine's stop.
        await this.activities.update(slot.computerId, (a) => ({ ...a, screens: {} }));
        await this.stretches.close(slot.computerId, reason);
        // A scan that could not tell does not hold the computer; the event says so.
        const detail: Record<string, string> = { reason };
        if (scan?.status === "unknown") detail.backgroundScan = `unknown: ${scan.reason}`.slice(0, 200);
        this.events.emit("suspending", slot.computerId, started, detail);
        return true;
      } finally {
        await this.leases.release(reservation).catch(() => {});
      }
    })) as boolean;
  }

  /** Notes a use of the computer now in the shared activity, unthrottled: every worker's idle time restarts. */
  async noteUseNow(slot: ComputerSlot): Promise<void> {
    const now = this.parts.clock();
    slot.lastActivityAt = now;
    slot.activityWrittenAt = now;
    await this.activities.update(slot.computerId, (a) => ({ ...a, lastActivityAt: Math.max(a.lastActivityAt, now) }));
  }

  /** A bot executing (not waiting for a takeover) or a person in control, on any worker. */
  private async heldAgainstSuspension(computerId: string): Promise<boolean> {
    const activity = await this.activities.get(computerId);
    const holds = await this.holdsOf(computerId, activity);
    const waiting = activity?.waiting ?? {};
    return holds.controlled.length > 0 || holds.executing.some((botId) => waiting[botId] === undefined);
  }

  /**
   * Suspends the computers that are idle for `idleMs`, and, on providers that
   * bill while running, those up for `maxActiveMs` in one stretch. Returns
   * the suspended ids.
   */
  async suspendIdle(): Promise<string[]> {
    const now = this.parts.clock();
    const suspended: string[] = [];
    // Every computer of the deployment, not only this process's: a worker
    // that died leaves its computers to the others.
    for (const computerId of await this.ledger.computerIds()) {
      const slot = this.slotOf(computerId);
      const reason = await this.suspensionDue(slot, now);
      if (!reason) continue;
      try {
        if (await this.suspend(slot, reason)) suspended.push(computerId);
      } catch (error) {
        // Another worker claimed it first (suspending or repairing it): its turn.
        if (!AgentComputerError.is(error, "LEASE_HELD")) throw error;
      }
    }
    return suspended;
  }

  /**
   * Deletes the computer for good under a computer-wide reservation:
   * destroys its machine, closes its stretch as `deleted`, deletes its
   * record, its home and its place in the deployment's index.
   */
  async remove(slot: ComputerSlot, record: ComputerRecord): Promise<void> {
    // "stop" is the closest purpose the lease engine has: deletion stops the computer for good.
    const holder = `deletion-${randomUUID()}`;
    const reservation = await this.leases.reserve({ computerId: slot.computerId, holder, purpose: "stop" });
    try {
      await slot.lifecycle.add(() => this.removeUnderOperation(slot, record));
    } finally {
      await this.leases.release(reservation).catch(() => {});
    }
  }

  /** `remove`'s steps, for an operation that holds the computer's reservation and its queue (`underOperation`). */
  async removeUnderOperation(slot: ComputerSlot, record: ComputerRecord): Promise<void> {
    const id = slot.computerId;
    const current = (await this.leases.getComputer(id)) ?? record;
    await (await this.currentMachine(slot, current))?.destroy();
    slot.machine = undefined;
    await this.stretches.close(id, "deleted");
    // The history stays; whom it was attributed to goes with the computer.
    await this.stretches.records?.clearOwner({ computerId: id });
    const last = await this.leases.getComputer(id);
    if (last) await this.leases.deleteComputer({ computerId: id, expectedVersion: last.version });
    // After the record: a crash here leaves a home no record owns (object stores' reconciler removes those).
    await this.parts.homeStore.delete(current.homeKey);
    await this.ledger.removeComputer(id);
    this.indexed.delete(id);
    this.slots.delete(id);
  }

  /** For an operation holding the reservation and queue: reconnect, or provision and restore, as stages. */
  machineUnderOperation(slot: ComputerSlot, stage: StageRunner): Promise<Machine> {
    return this.bringUp(slot, stage);
  }

  /** Whether the record shows the running stretch of its machine, in the record and in the run records. */
  async startIsRecorded(record: ComputerRecord): Promise<boolean> {
    return this.stretches.isRecorded(record);
  }

  /** Opens the stretch of a machine found running unrecorded, from `noticedAt` (the reconciler, §9). */
  async recordNoticedStart(record: ComputerRecord, noticedAt: number): Promise<void> {
    await this.stretches.openNoticed(record, noticedAt);
  }

  /** The reconciler found the record's machine gone: forgets its ref and closes the stretch as `reconciled`. */
  async forgetGoneMachine(record: ComputerRecord): Promise<void> {
    await this.stretches.forgetMachine(record);
    const slot = this.slots.get(record.computerId);
    if (slot?.machine?.ref === record.providerRef) this.machineStopped(slot);
  }

  private newSlot(computerId: string): ComputerSlot {
    const slot: ComputerSlot = {
      computerId,
      scope: undefined,
      owner: undefined,
      machine: undefined,
      machineStretch: undefined,
      checkedAt: 0,
      lifecycle: new PQueue({ concurrency: 1 }),
      runs: new Set(),
      takeovers: new Set(),
      lastActivityAt: 0,
      activityWrittenAt: Number.NEGATIVE_INFINITY,
      knownBots: new Set(),
    };
    this.slots.set(computerId, slot);
    return slot;
  }

  /** Reconnects by the record's ref, or provisions a replacement and restores the home into it first. */
  private async bringUp(slot: ComputerSlot, stage: StageRunner = noStages): Promise<Machine> {
    const record = await this.recordOf(slot);
    if (record.providerRef === null) return this.replace(slot, record, undefined, stage);
    if (record.providerKind !== this.providerKind) return this.replace(slot, record, "replaced", stage);
    const started = performance.now();
    const found = await this.provider.reconnect(record.providerRef as ProviderRef);
    if (found === "gone") {
      slot.machine = undefined;
      return this.replace(slot, record, "gone", stage);
    }
    const current = await this.stretches.open(record, { providerKind: this.providerKind, ref: found.ref }, undefined);
    const stretch = openStretchId(current);
    if (slot.machine?.ref !== found.ref) return this.ready(slot, found, started, "reconnected", stretch);
    // The object is kept while ref and stretch stay (a stop through any worker closes the stretch): it keeps
    // its desktop service key, where a new object hands its own over through an exec, ~1 s a grant (issue 48).
    if (stretch === undefined || slot.machineStretch !== stretch) this.hold(slot, found, stretch);
    slot.checkedAt = performance.now();
    return slot.machine as Machine;
  }

  /**
   * Provisions a machine for the record's computer, restores the latest
   * checkpoint into it and switches the record to it. Bring-up and the
   * update and recovery operations share this path.
   */
  private async replace(
    slot: ComputerSlot,
    record: ComputerRecord,
    previousEnd: StretchEnd | undefined,
    stage: StageRunner,
  ): Promise<Machine> {
    const started = performance.now();
    const machine = await stage("provisioning", () =>
      this.provider.provision(computerSpecFor(record, this.machineDefaults())),
    );
    this.events.emit("provisioning", slot.computerId, started, { providerKind: this.providerKind });
    let stretch: string | undefined;
    try {
      const restoring = performance.now();
      const restored = await stage("restoring", () => restoreLatestHome(this.checkpointParts(), record, machine));
      if (restored.revision > 0)
        this.events.emit("restoring", record.computerId, restoring, { revision: restored.revision });
      await stage("switching", async () => {
        const ref = machine.ref;
        stretch = openStretchId(
          await this.stretches.open(record, { providerKind: this.providerKind, ref }, previousEnd),
        );
        return { fromKind: record.providerKind, toKind: this.providerKind };
      });
    } catch (error) {
      // Nothing may use a machine whose home was not restored.
      await machine.destroy().catch(() => {});
      throw error;
    }
    // A new machine has no screens yet, whatever the old one kept.
    await this.activities.update(slot.computerId, (a) => ({ ...a, screens: {} }));
    if (previousEnd) this.events.emit("replaced", slot.computerId, started, { reason: previousEnd });
    return this.ready(slot, machine, started, previousEnd ? "replaced" : "provisioned", stretch);
  }

  private async ready(slot: ComputerSlot, machine: Machine, started: number, how: string, stretch?: string) {
    this.hold(slot, machine, stretch);
    slot.checkedAt = performance.now();
    await this.touch(slot);
    this.events.emit("ready", slot.computerId, started, { how });
    return machine;
  }

  /** `machine` becomes the slot's; `stretch` is the record's stretch it was found running in, where known. */
  private hold(slot: ComputerSlot, machine: Machine, stretch?: string): void {
    if (slot.machine === machine && stretch === undefined) return;
    slot.machine = machine;
    slot.machineStretch = stretch;
  }

  private machineStopped(slot: ComputerSlot): void {
    slot.machine = undefined;
    slot.machineStretch = undefined;
  }

  /** The computer's record, made on first use with the slot's scope, or given that scope when it has none. */
  private async recordOf(slot: ComputerSlot): Promise<ComputerRecord> {
    // Indexed before the record exists, so the reconciler can find every record this deployment made.
    if (!this.indexed.has(slot.computerId)) {
      await this.ledger.addComputer(slot.computerId);
      this.indexed.add(slot.computerId);
    }
    const existing = await this.leases.getComputer(slot.computerId);
    return existing
      ? withScope(this.leases, existing, slot.scope, slot.owner)
      : createRecord(this.leases, slot, this.providerKind);
  }

  private async checkpointNow(slot: ComputerSlot, reason: string): Promise<void> {
    // The last one to finish may be on a worker that never used this computer's machine.
    const record = slot.machine ? undefined : await this.leases.getComputer(slot.computerId);
    const machine = slot.machine ?? (record && isRunning(record) ? await this.currentMachine(slot, record) : undefined);
    if (!machine) return;
    this.hold(slot, machine);
    const started = performance.now();
    const saved = await checkpointHome(this.checkpointParts(), slot.computerId, machine);
    await this.activities.update(slot.computerId, (a) => ({ ...a, checkpointPending: false }));
    this.events.emit("checkpointing", slot.computerId, started, {
      reason,
      revision: saved.revision,
      mounted: saved.mounted,
    });
  }

  private machineDefaults(): MachineDefaults {
    const { spec, egressFor, settings } = this.parts;
    const defaults = { spec, teamScreenLimit: settings.screenLimit, deploymentLabels: this.deploymentLabels };
    return egressFor ? { ...defaults, egressFor } : defaults;
  }

  private checkpointParts(): HomeCheckpointParts {
    return {
      leases: this.leases,
      homeStore: this.parts.homeStore,
      holder: this.holder,
      leaseTtlMs: this.leaseTtlMs,
      mountedHome: this.provider.capabilities.mountedHome,
    };
  }

  /** Why the computer should be suspended now (suspension-rules.ts), unless an operation repairs it or it is reserved. */
  private async suspensionDue(slot: ComputerSlot, now: number): Promise<"idle" | "active_limit" | undefined> {
    if (this.operating.has(slot.computerId)) return undefined;
    const record = await this.leases.getComputer(slot.computerId);
    if (!record || record.providerKind !== this.providerKind || !isRunning(record)) return undefined;
    if (await this.leases.getReservation(slot.computerId)) return undefined;
    // Decided on what every worker sees: the leases and the shared activity.
    const activity = await this.activities.get(slot.computerId);
    return suspensionReason({
      record,
      activity,
      holds: await this.holdsOf(slot.computerId, activity),
      localLastUse: slot.lastActivityAt,
      billsWhileRunning: this.provider.capabilities.billsWhileRunning,
      idleMs: this.parts.settings.idleMs,
      maxActiveMs: this.parts.settings.maxActiveMs,
      now,
    });
  }
}
