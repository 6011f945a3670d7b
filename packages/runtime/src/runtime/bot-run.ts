import { performance } from "node:perf_hooks";
import type { DesktopOptions, DesktopSession, Machine, PageSecretText } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { Lease, RunState } from "@agent-computer/leases";
import { z } from "zod";
import { redactSecrets } from "../tools/redact-secrets.js";
import type { ComputerLifecycle } from "./computer-lifecycle.js";
import type { ComputerSlot } from "./computer-slot.js";
import type { SecretSource } from "./secret-source.js";

export const runOutcomeSchema = z.enum(["completed", "failed"]);

/** How often a run waiting for a takeover looks in the store for its end. */
const TAKEOVER_POLL_MS = 1000;

/**
 * One run of one bot on its computer. Nothing starts until the run first
 * uses the computer (`machine()`), and the desktop only when it first uses a
 * graphical tool (`desktop()`). The run drives its bot under an execution
 * lease, renewed while it lives; `end()` releases it and saves the home,
 * unless other bots still work (then the last one to finish saves).
 */
export class BotRun {
  /** `active` while the bot works; `waiting_takeover` while it asks a person for help. */
  state: RunState = "active";
  /** By the runtime's clock: when this run last asked for a takeover (the takeover hold counts from it). */
  takeoverRequestedAt: number | undefined;
  private lease: Lease | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private renewing = false;
  private desktopSession: DesktopSession | undefined;
  private ended = false;
  private takeoverWaiters: (() => void)[] = [];
  /** @internal Settles once the store says this run waits for a takeover (every worker then sees it). */
  waitingRecorded: Promise<void> | undefined;
  /** @internal Whether this run took its execution lease (then its end saves or defers a save). */
  usedComputer = false;

  constructor(
    readonly runId: string,
    readonly botId: string,
    private readonly slot: ComputerSlot,
    private readonly lifecycle: ComputerLifecycle,
    private readonly secrets: { readonly workspaceId: string; readonly source: SecretSource | undefined } = {
      workspaceId: "",
      source: undefined,
    },
  ) {}

  /**
   * @internal The value of the vault secret `name` for this run's bot, for
   * the page tools to hand to `PageBrowser.act` and nothing else.
   */
  async secretText(name: string): Promise<PageSecretText> {
    const { workspaceId, source } = this.secrets;
    if (!source) {
      throw new AgentComputerError(
        "UNSUPPORTED",
        `This runtime has no secret vault, so the secret ${name} cannot be typed (createComputerRuntime's secrets option).`,
      );
    }
    return source.resolve({ workspaceId, botId: this.botId, name });
  }

  get computerId(): string {
    return this.slot.computerId;
  }

  /** A person controls this bot's screen now (a takeover through the runtime). */
  get screenHeldByPerson(): boolean {
    return this.lifecycle.screenHeld(this.slot, this.botId);
  }

  /**
   * The bot's own folder, relative to the home: where its commands start.
   * On a Team computer `bots/<bot-id>` (the team's work in `shared/`); a
   * Private computer is its one bot's, whose folder is the whole home (".").
   */
  get workdir(): string {
    return this.slot.scope?.kind === "private" ? "." : `bots/${this.botId}`;
  }

  /**
   * The computer, started, reconnected or replaced as needed, fenced by this
   * run's execution lease. BOT_BUSY while another run drives the same bot.
   */
  async machine(): Promise<Machine> {
    if (this.ended) throw new AgentComputerError("CONFLICT", `Run ${this.runId} has ended; start a new run.`);
    const first = !this.lease;
    if (!this.lease) {
      // The lease first, then the computer: a worker that claimed the computer
      // to suspend it either sees this lease after claiming (and backs off),
      // or refused it (LEASE_HELD) before this run touched the machine.
      await this.lifecycle.noteBot(this.slot, this.botId);
      this.lease = await this.acquire();
      this.usedComputer = true;
      this.heartbeat = setInterval(() => void this.renew(), Math.max(50, this.lifecycle.leaseTtlMs / 3));
      this.heartbeat.unref?.();
    }
    // A run's first call always asks the provider: the machine another run saw
    // a moment ago may have been destroyed since.
    const raw = await this.lifecycle.ensure(this.slot, { verify: first });
    if (first && this.workdir !== ".") {
      await raw.exec({ argv: ["mkdir", "-p", this.workdir, "shared"] }, { lease: this.lease });
    }
    await this.lifecycle.touch(this.slot);
    return this.lifecycle.leases.fenced(raw, this.lease);
  }

  /** The bot's desktop, started on first use; UNSUPPORTED where the provider has none. */
  async desktop(options?: DesktopOptions): Promise<DesktopSession> {
    const machine = await this.machine();
    if (this.desktopSession) return this.desktopSession;
    this.desktopSession = await this.lifecycle.screens.openScreen(this.slot, machine, this.botId, options);
    return this.desktopSession;
  }

  /**
   * Asks a person to take over this bot's screen and waits until they have
   * released it: meanwhile the run is `waiting_takeover`, so the runtime
   * accepts their takeover; afterwards it is `active` again.
   */
  async requestTakeover(reason: string, signal?: AbortSignal): Promise<void> {
    if (this.ended) throw new AgentComputerError("CONFLICT", `Run ${this.runId} has ended; start a new run.`);
    this.state = "waiting_takeover";
    // Asking restarts the idle timer; on providers that do not bill while
    // running it also starts the takeover hold (docs/architecture.md §9).
    // Both are in the shared activity, so every worker decides by them.
    const requestedAt = this.lifecycle.now();
    this.takeoverRequestedAt = requestedAt;
    const recorded = (async () => {
      const token = (await this.lifecycle.holdsOf(this.computerId)).controlTokens[this.botId] ?? 0;
      await this.lifecycle.setWaiting(this.slot, this.botId, requestedAt);
      await this.lifecycle.touch(this.slot, requestedAt);
      return token;
    })();
    this.waitingRecorded = recorded.then(() => {});
    const seenToken = await recorded;
    // The reason is the model's own words: it may quote a secret.
    this.lifecycle.events.emit("takeover-requested", this.computerId, performance.now(), {
      botId: this.botId,
      reason: redactSecrets(reason).slice(0, 500),
    });
    // A person's takeover may run through another worker's runtime: its end
    // is seen in the store, when the user-control token moved past the one
    // seen here and is no longer held.
    const poll = setInterval(() => void this.checkTakeoverEnded(seenToken), TAKEOVER_POLL_MS);
    poll.unref?.();
    try {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(new AgentComputerError("ABORTED", "The takeover request was aborted."));
        if (signal?.aborted) return onAbort();
        signal?.addEventListener("abort", onAbort, { once: true });
        this.takeoverWaiters.push(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    } finally {
      clearInterval(poll);
      this.state = "active";
      await this.lifecycle.setWaiting(this.slot, this.botId, undefined).catch(() => {});
    }
  }

  private async checkTakeoverEnded(seenToken: number): Promise<void> {
    if (this.takeoverWaiters.length === 0) return;
    try {
      const holds = await this.lifecycle.holdsOf(this.computerId);
      const token = holds.controlTokens[this.botId] ?? 0;
      if (token > seenToken && !holds.controlled.includes(this.botId)) this.takeoverEnded();
    } catch {
      // The store failed for a moment: the next poll asks again.
    }
  }

  /** @internal The runtime calls this when a person released this bot's screen. */
  takeoverEnded(): void {
    const waiters = this.takeoverWaiters;
    this.takeoverWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Ends the run: releases the execution lease (every handle of the run,
   * its screen control too, refuses from then on) and saves the home at this
   * boundary. A completed run keeps its bot's screen and browser for its
   * next run (views and logged-in sessions intact) where the provider
   * `keepsScreensBetweenRuns`; a failed one, or any run elsewhere, frees
   * the display slot (the profile stays). Idempotent.
   */
  async end(outcome: "completed" | "failed"): Promise<void> {
    const parsed = runOutcomeSchema.safeParse(outcome);
    if (!parsed.success) {
      throw new AgentComputerError("INVALID_ARGUMENT", 'Invalid run outcome: expected "completed" or "failed".');
    }
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    if (this.desktopSession) {
      const keeps = this.lifecycle.provider.capabilities.keepsScreensBetweenRuns !== false;
      if (parsed.data === "completed" && keeps) {
        await this.lifecycle.screens.keepScreen(this.slot, this.botId).catch(() => {});
      } else {
        await this.desktopSession.release().catch(() => {});
        await this.lifecycle.screens.forgetScreen(this.slot, this.botId).catch(() => {});
      }
    }
    if (this.lease) await this.lifecycle.leases.release(this.lease).catch(() => {});
    await this.lifecycle.runEnded(this.slot, this, parsed.data);
  }

  private async acquire(): Promise<Lease> {
    try {
      return await this.lifecycle.leases.acquireExecution({
        computerId: this.slot.computerId,
        botId: this.botId,
        holder: this.runId,
        ttlMs: this.lifecycle.leaseTtlMs,
      });
    } catch (error) {
      if (!AgentComputerError.is(error, "LEASE_HELD")) throw error;
      if (await this.lifecycle.leases.getReservation(this.slot.computerId)) throw error;
      throw new AgentComputerError(
        "BOT_BUSY",
        `Bot "${this.botId}" is already driven by another run on computer "${this.slot.computerId}"; wait for it to end.`,
        { cause: error, details: { computerId: this.slot.computerId, botId: this.botId } },
      );
    }
  }

  /**
   * One heartbeat: renews the run's lease, which every handle of this run
   * follows (a renewal renews the whole grant: docs/architecture.md §6). The
   * timer runs while calls are in flight, however long they take; a
   * renewal still in flight is not doubled. A lease really lost (expired,
   * fenced out) stops the heartbeat: every handle then refuses with the
   * same error. A store that failed for a moment is tried again next beat.
   */
  private async renew(): Promise<void> {
    if (!this.lease || this.ended || this.renewing) return;
    this.renewing = true;
    try {
      this.lease = await this.lifecycle.leases.renew(this.lease);
    } catch (error) {
      if (AgentComputerError.is(error, "LEASE_LOST", "FENCED_OUT")) clearInterval(this.heartbeat);
    } finally {
      this.renewing = false;
    }
  }
}
