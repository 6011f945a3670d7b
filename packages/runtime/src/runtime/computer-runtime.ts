import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { DesktopSession, EgressDenial, Logger, Machine, SandboxProvider } from "@agent-computer/core";
import {
  AgentComputerError,
  botIdSchema,
  COMPUTER_LABELS,
  computerIdSchema,
  parseInput,
  silentLogger,
  workspaceIdSchema,
} from "@agent-computer/core";
import type { ComputerScope, Lease } from "@agent-computer/leases";
import { LeaseEngine } from "@agent-computer/leases";
import { z } from "zod";
import type { BotMode } from "./bot-mode.js";
import { BotRun } from "./bot-run.js";
import { ComputerActivities } from "./computer-activity.js";
import type { ComputerEvent } from "./computer-event.js";
import { ComputerEvents } from "./computer-events.js";
import { computerIdFor } from "./computer-id-for.js";
import { ComputerLifecycle } from "./computer-lifecycle.js";
import { ComputerOperations } from "./computer-operations.js";
import type { ComputerRuntimeOptions } from "./computer-runtime-options.js";
import { computerRuntimeOptionsSchema } from "./computer-runtime-options-schema.js";
import type { ComputerSlot } from "./computer-slot.js";
import { DeploymentLedger } from "./deployment-ledger.js";
import { openBotDesktop } from "./open-bot-desktop.js";
import { reconcileComputers } from "./reconcile-computers.js";
import type { ReconcileOptions } from "./reconcile-options.js";
import type { ReconcileReport } from "./reconcile-report.js";
import { RunRecords } from "./run-records.js";
import { runtimeSettingsFromEnv } from "./runtime-settings.js";
import type { SecretSource } from "./secret-source.js";

/** The label that ties a machine to the runtime deployment that made it: core's `COMPUTER_LABELS.deployment`. */
export const DEPLOYMENT_LABEL = COMPUTER_LABELS.deployment;
/** The label that names a machine's computer: core's `COMPUTER_LABELS.computerId`. */
export const COMPUTER_LABEL = COMPUTER_LABELS.computerId;

const computerAddressSchema = z.object({
  workspaceId: workspaceIdSchema,
  botId: botIdSchema,
  /** A Private Computer for this bot instead of the workspace's Team Computer. */
  private: z.boolean().default(false),
});
const startRunSchema = computerAddressSchema.extend({
  runId: z.string().min(1).max(128).optional(),
  /** The app's user the computer's running time counts for (its run records' `userId`). */
  userId: z.string().min(1).max(256).optional(),
});
const runHoursSchema = z
  .object({ from: z.number().nonnegative(), to: z.number().nonnegative().optional() })
  .refine((w) => w.to === undefined || w.to > w.from, { message: "expected to after from", path: ["to"] });
const forgetOwnerSchema = z.union([
  z.object({ userId: z.string().min(1).max(256) }).strict(),
  z.object({ spaceId: z.string().min(1).max(256) }).strict(),
]);
const botAddressSchema = z.object({ workspaceId: workspaceIdSchema, botId: botIdSchema });
const desktopForSchema = z.object({ computerId: computerIdSchema, botId: botIdSchema }).strict();
const takeoverSchema = z.object({
  computerId: computerIdSchema,
  botId: botIdSchema,
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
 * This is the public front; the lifecycle itself is `ComputerLifecycle`.
 */
export class ComputerRuntime {
  readonly leases: LeaseEngine;
  readonly leaseTtlMs: number;
  /** Update and recovery of computers, as durable background operations. */
  readonly operations: ComputerOperations;
  /** This runtime's name on the machines it makes (see `ComputerRuntimeOptions.deployment`). */
  readonly deployment: string;
  /** Every stretch the deployment's computers ran, paged (docs/architecture.md §9). */
  readonly runRecords: RunRecords;
  private readonly clock: () => number;
  private readonly events: ComputerEvents;
  private readonly lifecycle: ComputerLifecycle;
  private readonly secrets: SecretSource | undefined;

  constructor(options: ComputerRuntimeOptions) {
    const parsed = parseInput(computerRuntimeOptionsSchema, options, "ComputerRuntimeOptions");
    const logger = options.logger ?? silentLogger;
    const clock = options.clock ?? Date.now;
    const env = runtimeSettingsFromEnv(process.env);
    this.leases = new LeaseEngine(options.stateStore);
    this.leaseTtlMs = parsed.leaseTtlMs;
    this.deployment = parsed.deployment;
    this.events = new ComputerEvents(logger, clock);
    if (options.onEvent) this.events.on(options.onEvent);
    const ledger = new DeploymentLedger(options.stateStore, this.deployment);
    this.clock = clock;
    this.runRecords = new RunRecords(options.stateStore, this.deployment);
    const activities = new ComputerActivities(options.stateStore, this.deployment);
    this.secrets = options.secrets;
    this.lifecycle = new ComputerLifecycle({
      provider: options.provider,
      homeStore: options.homeStore,
      leases: this.leases,
      ledger,
      runRecords: this.runRecords,
      activities,
      events: this.events,
      clock,
      leaseTtlMs: this.leaseTtlMs,
      deployment: this.deployment,
      spec: options.spec,
      ...(options.egressFor ? { egressFor: options.egressFor } : {}),
      ...(options.browserProxy ? { browserProxy: options.browserProxy } : {}),
      settings: {
        screenLimit: parsed.screenLimit ?? env.screenLimit,
        idleMs: parsed.idleMs ?? env.idleMs,
        maxActiveMs: parsed.maxActiveMs ?? env.maxActiveMs,
        backgroundWorkHolds: parsed.backgroundWorkHoldsIdle,
      },
    });
    this.operations = new ComputerOperations(this.lifecycle, ledger, { logger, ...options.operations });
    options.provider.watchEgressDenials?.((denial) => this.reportEgressDenial(denial, logger));
  }

  /**
   * A request the provider's egress fence refused, as an `egress-denied`
   * event of its computer (issue 53): the app learns which computer was
   * refused what, while the bot's program gets the fence's own refusal. A
   * provider serving several runtimes reports to each.
   */
  private reportEgressDenial(denial: EgressDenial, logger: Logger): void {
    if (!denial.computerId) {
      logger.warn("an egress denial named no computer", { policy: denial.policy, host: denial.host });
      return;
    }
    this.events.emit("egress-denied", denial.computerId, performance.now(), {
      policy: denial.policy,
      host: denial.host,
      port: denial.port,
      reason: denial.reason,
      ...(denial.address ? { address: denial.address } : {}),
    });
  }

  /** Subscribes to lifecycle events; returns the unsubscribe function. */
  on(listener: (event: ComputerEvent) => void): () => void {
    return this.events.on(listener);
  }

  /**
   * The computer id a bot of a workspace works on (`team-<workspace>`, or
   * `private-<workspace>-<bot>` with every `-` inside the ids doubled, so no
   * two pairs share one). Only a name: what the computer is lives in its record.
   */
  computerIdFor(input: { workspaceId: string; botId: string; private?: boolean }): string {
    const { workspaceId, botId, private: own } = parseInput(computerAddressSchema, input, "computer address");
    return computerIdFor(workspaceId, botId, own ? "private" : "team");
  }

  /**
   * Where the bot works now: `private` while it has a Private computer (a
   * run with `private: true` or a mode change made one), else `team`. What
   * an app passes as `startRun`'s `private` after a mode change.
   */
  async botMode(input: { workspaceId: string; botId: string }): Promise<BotMode> {
    const { workspaceId, botId } = parseInput(botAddressSchema, input, "botMode input");
    return (await this.leases.getComputer(computerIdFor(workspaceId, botId, "private"))) ? "private" : "team";
  }

  /**
   * Starts a run of `botId`. Cheap: the computer starts when the run first
   * calls `machine()`. End it with `run.end("completed" | "failed")`.
   */
  startRun(input: { workspaceId: string; botId: string; private?: boolean; runId?: string; userId?: string }): BotRun {
    const parsed = parseInput(startRunSchema, input, "startRun input");
    const scope: ComputerScope = parsed.private ? { kind: "private", botId: parsed.botId } : { kind: "team" };
    const owner = { spaceId: parsed.workspaceId, ...(parsed.userId ? { userId: parsed.userId } : {}) };
    const slot = this.lifecycle.slotOf(this.computerIdFor(parsed), scope, owner);
    const run = new BotRun(parsed.runId ?? `run-${randomUUID()}`, parsed.botId, slot, this.lifecycle, {
      workspaceId: parsed.workspaceId,
      source: this.secrets,
    });
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
    const slot = this.lifecycle.slotOf(parsed.computerId);
    const run = [...slot.runs].find((r) => r.botId === parsed.botId);
    // A run on another worker that waits for a person says so in the shared activity.
    const waitingElsewhere = (await this.lifecycle.activities.get(parsed.computerId))?.waiting[parsed.botId];
    const state = run?.state ?? (waitingElsewhere === undefined ? "idle" : "waiting_takeover");
    const lease = await this.leases.takeover({ ...parsed, run: state });
    slot.takeovers.add(lease);
    await this.lifecycle.touch(slot);
    this.events.emit("takeover-started", slot.computerId, performance.now(), { botId: parsed.botId });
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
    const slot = this.lifecycle.slotOf(computerId);
    const machine = await this.lifecycle.ensure(slot);
    await this.lifecycle.touch(slot);
    return openBotDesktop(machine, botId, await this.lifecycle.screens.optionsFor(computerId, botId));
  }

  /**
   * Records a use of the computer now (a person watching its screen or
   * using its terminal; screens' runtime authority calls it while a socket
   * is open): idle suspension counts from the last use, on every worker.
   * A computer never made is NOT_FOUND.
   */
  async noteUse(computerId: string): Promise<void> {
    const id = parseInput(computerIdSchema, computerId, "computerId");
    if (!(await this.leases.getComputer(id)))
      throw new AgentComputerError("NOT_FOUND", `Computer "${id}" does not exist; a bot's run makes it.`);
    await this.lifecycle.noteUseNow(this.lifecycle.slotOf(id));
  }

  /**
   * The machine of a computer while it runs here, without starting it:
   * undefined when it is stopped or suspended (or this process has not
   * used it since it started). A person's files (screens' files service)
   * read a stopped computer from the home store instead.
   */
  async runningMachine(computerId: string): Promise<Machine | undefined> {
    const slot = this.lifecycle.knownSlot(parseInput(computerIdSchema, computerId, "computerId"));
    return slot?.machine;
  }

  /** Ends a takeover; the bot that asked for it resumes, and a checkpoint deferred for it is taken now. */
  async releaseTakeover(lease: Lease): Promise<void> {
    await this.leases.release(lease);
    if (lease.computerId === undefined) return;
    const slot = this.lifecycle.slotOf(lease.computerId);
    // A person just used the screen: that counts as activity.
    await this.lifecycle.touch(slot);
    for (const held of slot.takeovers)
      if (held.token === lease.token && held.key === lease.key) slot.takeovers.delete(held);
    if (lease.botId !== undefined)
      this.events.emit("takeover-ended", slot.computerId, performance.now(), { botId: lease.botId });
    // A run waiting on another worker sees the release in the store itself.
    for (const run of slot.runs) if (run.botId === lease.botId && run.state === "waiting_takeover") run.takeoverEnded();
    if (await this.lifecycle.checkpointPending(slot.computerId))
      await this.lifecycle.saveUnlessHeld(slot, "takeover-ended");
  }

  /** Saves the home, then stops the computer. BOT_BUSY while runs use it. */
  async stopComputer(computerId: string): Promise<void> {
    const slot = this.lifecycle.slotOf(parseInput(computerIdSchema, computerId, "computerId"));
    refuseWhileRunsUse(slot);
    await this.lifecycle.refuseWhileBotsRun(slot.computerId, "stop");
    await this.lifecycle.refuseIfReserved(slot.computerId, "stop");
    await this.lifecycle.suspend(slot, "stopped");
  }

  /**
   * Suspends computers idle for `idleMs`, and, on providers that bill while
   * running, those up for `maxActiveMs` in one stretch. A run executing or a
   * person in control keeps a computer up. Returns the suspended ids.
   */
  suspendIdle(): Promise<string[]> {
    return this.lifecycle.suspendIdle();
  }

  /**
   * Deletes a bot: its folder `bots/<bot-id>` and browser profile
   * `.browser-profiles/<bot-id>` on the workspace's Team Computer (saved
   * at once, so a later restore does not bring them back), and its Private
   * Computer if it has one. BOT_BUSY while the bot runs. Run history is
   * the app's: keep it and clear the bot there.
   */
  async deleteBot(input: { workspaceId: string; botId: string }): Promise<{ privateComputerDeleted: boolean }> {
    const { workspaceId, botId } = parseInput(botAddressSchema, input, "deleteBot input");
    const teamId = this.computerIdFor({ workspaceId, botId });
    if (await this.leases.getComputer(teamId)) await this.removeBotFiles(teamId, botId);
    const privateId = this.computerIdFor({ workspaceId, botId, private: true });
    return { privateComputerDeleted: await this.deleteComputer(privateId) };
  }

  /**
   * Deletes a computer for good: destroys its machine, closes its stretch
   * as `deleted`, deletes its record and its home (`homeStore.delete`).
   * Runs under a computer-wide reservation: LEASE_HELD while an operation
   * holds the computer, BOT_BUSY while runs use it (on any worker).
   * Returns false when there was no such computer.
   */
  async deleteComputer(computerId: string): Promise<boolean> {
    const id = parseInput(computerIdSchema, computerId, "computerId");
    const record = await this.leases.getComputer(id);
    if (!record) return false;
    const slot = this.lifecycle.slotOf(id);
    refuseWhileRunsUse(slot);
    await this.lifecycle.refuseWhileBotsRun(id, "delete");
    await this.lifecycle.remove(slot, record);
    return true;
  }

  /**
   * One reconciler pass over this deployment (see `reconcileComputers`):
   * marks interrupted operations, republishes missed enqueues, destroys
   * orphan machines after `orphanGraceMs`, and closes the open stretch of
   * records whose machine is gone as `reconciled`. Run it periodically.
   */
  async reconcile(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    return reconcileComputers(this.lifecycle, this.operations, options);
  }

  /**
   * Hours each user's computers ran within [from, to) (default to: now, by
   * the runtime's clock), open stretches counted up to now, over the whole
   * history of run records. Cleared owners count under `null`.
   */
  async runHours(window: { from: number; to?: number }): Promise<Map<string | null, number>> {
    const { from, to } = parseInput(runHoursSchema, window, "runHours window");
    const now = this.clock();
    return this.runRecords.runHours({ from, to: to ?? now, now });
  }

  /**
   * The app deleted a user or a space: their run records stay, with
   * `userId` and `spaceId` cleared. Returns how many records changed.
   */
  async forgetOwner(owner: { userId: string } | { spaceId: string }): Promise<number> {
    return this.runRecords.clearOwner(parseInput(forgetOwnerSchema, owner, "forgetOwner input"));
  }

  /** What the provider's computers can do; tools offer themselves by it. */
  get capabilities(): SandboxProvider["capabilities"] {
    return this.lifecycle.provider.capabilities;
  }

  /** Removes the bot's folder and profile from the Team computer under its execution lease, and saves at once. */
  private async removeBotFiles(teamId: string, botId: string): Promise<void> {
    const slot = this.lifecycle.slotOf(teamId);
    if ([...slot.runs].some((run) => run.botId === botId))
      throw new AgentComputerError("BOT_BUSY", `Stop bot "${botId}" first: it runs on computer "${teamId}".`);
    // The bot's execution lease keeps any other process from driving it while its files go.
    const lease = await this.executionForDeletion(teamId, botId);
    try {
      const machine = this.leases.fenced(await this.lifecycle.ensure(slot), lease);
      // Its kept screen goes first: a browser must not write into a profile being removed.
      await this.lifecycle.screens.releaseKeptScreen(slot, machine, botId);
      const removed = await machine.exec({
        argv: ["rm", "-rf", "--", `bots/${botId}`, `.browser-profiles/${botId}`],
      });
      if (removed.exitCode !== 0) {
        throw new AgentComputerError("UNAVAILABLE", `Could not remove bot "${botId}"'s files on "${teamId}".`, {
          details: { exitCode: removed.exitCode },
        });
      }
      await this.lifecycle.checkpoint(slot, "bot-deleted");
    } finally {
      await this.leases.release(lease).catch(() => {});
    }
  }

  /** The bot's execution lease for deleting it; BOT_BUSY while a run elsewhere drives it. */
  private async executionForDeletion(computerId: string, botId: string): Promise<Lease> {
    try {
      return await this.leases.acquireExecution({
        computerId,
        botId,
        holder: `bot-deletion-${randomUUID()}`,
        ttlMs: this.leaseTtlMs,
      });
    } catch (error) {
      if (!AgentComputerError.is(error, "LEASE_HELD") || (await this.leases.getReservation(computerId))) throw error;
      throw new AgentComputerError("BOT_BUSY", `Stop bot "${botId}" first: a run drives it on "${computerId}".`, {
        cause: error,
      });
    }
  }
}

/** BOT_BUSY while runs of this process use the computer. */
function refuseWhileRunsUse(slot: ComputerSlot): void {
  if (slot.runs.size === 0) return;
  throw new AgentComputerError(
    "BOT_BUSY",
    `Stop the bots first: ${slot.runs.size} run(s) use computer "${slot.computerId}".`,
  );
}

/** Builds a `ComputerRuntime`; see its doc comment. */
export function createComputerRuntime(options: ComputerRuntimeOptions): ComputerRuntime {
  return new ComputerRuntime(options);
}
