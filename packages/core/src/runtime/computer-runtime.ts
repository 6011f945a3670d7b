import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import PQueue from "p-queue";
import { z } from "zod";
import type { ComputerSpec } from "../contract/computer-spec.js";
import { type Logger, silentLogger } from "../contract/logger.js";
import type { Machine } from "../contract/machine.js";
import type { SandboxProvider } from "../contract/sandbox-provider.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import type { AgentHomeStore } from "../home-store/agent-home-store.js";
import type { ComputerRecord } from "../lease/computer-record.js";
import type { Lease } from "../lease/lease.js";
import { LeaseEngine } from "../lease/lease-engine.js";
import { parseInput } from "../validation/parse-input.js";
import { BotRun, type BotRunHost } from "./bot-run.js";
import type { ComputerEvent } from "./computer-event.js";
import type { ComputerRuntimeOptions } from "./computer-runtime-options.js";
import type { ComputerSlot } from "./computer-slot.js";
import { runtimeSettingsFromEnv } from "./runtime-settings.js";

type StretchEnd = NonNullable<ComputerRecord["runs"][number]["endReason"]>;
const MAX_STRETCH_RECORDS = 50;
/** A machine found alive this recently is handed out without asking the provider again. */
const LIVENESS_MS = 1000;

const idSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "letters, digits, _ and -, up to 64");
const startRunSchema = z.object({
  workspaceId: idSchema,
  botId: idSchema,
  /** A Private Computer for this bot instead of the workspace's Team Computer. */
  private: z.boolean().default(false),
  runId: z.string().min(1).max(128).optional(),
});
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
    return lease;
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

  /** @internal Used by runs: the computer's machine, started, reconnected or replaced. */
  async ensureMachine(slot: ComputerSlot): Promise<Machine> {
    return (await slot.lifecycle.add(async () => {
      if (slot.machine && performance.now() - slot.checkedAt < LIVENESS_MS) return slot.machine;
      return this.bringUp(slot);
    })) as Machine;
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

    const started = performance.now();
    const machine = await this.provider.provision(this.specFor(slot));
    this.emit("provisioning", slot, started, { providerKind: this.provider.kind });
    try {
      const restoring = performance.now();
      const restored = await this.homeStore.restore({
        homeKey: slot.homeKey,
        target: this.provider.capabilities.mountedHome ? { mounted: true } : { machine },
      });
      if (restored) this.emit("restoring", slot, restoring, { revision: restored.revision });
      await this.openStretch(record, machine.ref, previousEnd);
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
      labels: { ...this.spec?.labels, "agent-computer.computer-id": slot.computerId },
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
  clock: z.custom<() => number>((v) => typeof v === "function", { message: "expected a function" }).optional(),
  onEvent: z.custom((v) => typeof v === "function", { message: "expected a function" }).optional(),
});

/** Builds a `ComputerRuntime`; see its doc comment. */
export function createComputerRuntime(options: ComputerRuntimeOptions): ComputerRuntime {
  return new ComputerRuntime(options);
}
