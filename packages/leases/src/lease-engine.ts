import type { Machine } from "@agent-computer/core";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import type { BotHolds } from "./bot-holds.js";
import type { ComputerOwner } from "./computer-owner.js";
import type { ComputerRecord } from "./computer-record.js";
import {
  computerIdSchema,
  createComputerSchema,
  deleteComputerSchema,
  updateComputerSchema,
} from "./computer-schemas.js";
import type { ComputerScope } from "./computer-scope.js";
import { type ComputerValue, computerValueOf, liveComputer } from "./computer-value.js";
import { fenced } from "./fenced-machine.js";
import type { Lease } from "./lease.js";
import type { LeaseEngineOptions } from "./lease-engine-options.js";
import * as schemas from "./lease-engine-schemas.js";
import type { LeaseKind } from "./lease-kind.js";
import { derivedKey, isHeld, type LeaseRecord, leaseRecordOf, leaseStoreKey } from "./lease-record.js";
import { bump, classifyLease, held, lost, reservationId, withoutUndefined } from "./lease-refusals.js";
import { type IssuedLease, issuedLease, registerLease } from "./lease-registry.js";
import type { Reservation } from "./reservation.js";
import type { ReservationPurpose } from "./reservation-purpose.js";
import type { ReservationState } from "./reservation-state.js";
import type { RunState } from "./run-state.js";
import type { StateStore } from "./state-store.js";
import type { VersionedRecord } from "./versioned-record.js";

/** A decision taken on one consistent read: what to return, and what to write first (if anything). */
interface Plan<T> {
  readonly result: T;
  readonly write?: readonly VersionedRecord[];
}

interface GrantSpec {
  readonly kind: LeaseKind;
  readonly key: string;
  readonly holder: string;
  readonly ttlMs: number;
  readonly computerId?: string;
  readonly botId?: string;
  readonly purpose?: ReservationPurpose;
}

/**
 * Leases, fencing and computer records over a `StateStore` (docs/architecture.md §6).
 *
 * Every decision is made on one read and applied by one compare-and-set
 * commit that expects every key it read, so a decision never outlives the
 * state it was made on; a lost race re-reads and decides again. Time comes
 * from two clocks only: the store's (`store.now()`) for what the store
 * decides, and the client's monotonic clock for a holder's own deadline.
 * The wall clock of this process is never read.
 */
export class LeaseEngine {
  readonly store: StateStore;
  private readonly monotonic: () => number;
  private readonly interruptAfterMs: number;
  private readonly maxAttempts: number;
  private readonly leaseSchema = z.custom<Lease>((v) => issuedLease(v)?.engine === this, {
    message:
      "expected a lease issued by this LeaseEngine (a copy, a hand-made object or another engine's lease is refused)",
  });

  private readonly commitRevisionSchema = z
    .object({
      computerId: computerIdSchema,
      lease: this.leaseSchema,
      expectedRevision: z.number().int().nonnegative(),
      next: z.number().int().positive(),
      attempt: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/)
        .optional(),
    })
    .refine((v) => v.lease.kind === "checkpoint" && v.lease.computerId === v.computerId, {
      message: "expected the checkpoint lease of this computer",
      path: ["lease"],
    })
    .refine((v) => v.next > v.expectedRevision, {
      message: "expected a revision above expectedRevision",
      path: ["next"],
    });

  constructor(store: StateStore, options: LeaseEngineOptions = {}) {
    this.store = parseInput(schemas.storeSchema, store, "LeaseEngine store");
    const parsed = parseInput(schemas.optionsSchema, options, "LeaseEngineOptions");
    this.monotonic = parsed.monotonicNow ?? (() => performance.now());
    this.interruptAfterMs = parsed.interruptAfterMs ?? 10 * 60 * 1000;
    this.maxAttempts = parsed.maxAttempts ?? 64;
  }

  /**
   * Grants the lease on an app-named `key` with a token larger than any
   * this key had. LEASE_HELD while another holder's lease is live. The same
   * holder acquiring again while its lease is live gets the same token with a
   * fresh TTL: that is what makes a retry after a lost response safe.
   */
  async acquire(input: { key: string; holder: string; ttlMs: number }): Promise<Lease> {
    const { key, holder, ttlMs } = parseInput(schemas.acquireSchema, input, "acquire input");
    return this.grant({ kind: "custom", key, holder, ttlMs });
  }

  /**
   * One driver per bot: the execution lease of `botId` on `computerId`.
   * Different bots hold theirs concurrently. LEASE_HELD while a reservation
   * runs on the computer (an already granted lease keeps renewing).
   */
  async acquireExecution(input: { computerId: string; botId: string; holder: string; ttlMs: number }): Promise<Lease> {
    const { computerId, botId, holder, ttlMs } = parseInput(
      schemas.acquireExecutionSchema,
      input,
      "acquireExecution input",
    );
    const reservationKey = leaseStoreKey("reservation", derivedKey.reservation(computerId));
    return this.grant(
      { kind: "execution", key: derivedKey.execution(computerId, botId), holder, ttlMs, computerId, botId },
      [reservationKey],
      (_now, records) => this.refuseIfReserved(records.get(reservationKey), "start a bot"),
    );
  }

  /**
   * A person takes control of `botId`'s screen: the user-control lease.
   * While it is held, the bot's desktop actions through `fenced()` fail
   * FENCED_OUT. Refused with BOT_BUSY ("Stop the bot first") while the bot
   * holds a live execution lease or `run` is `active`, unless `run` is
   * `waiting_takeover` (the bot asked for a person). LEASE_HELD while another
   * person controls the screen or a reservation runs.
   */
  async takeover(input: {
    computerId: string;
    botId: string;
    holder: string;
    ttlMs: number;
    run?: RunState;
  }): Promise<Lease> {
    const { computerId, botId, holder, ttlMs, run } = parseInput(schemas.takeoverSchema, input, "takeover input");
    const executionKey = leaseStoreKey("execution", derivedKey.execution(computerId, botId));
    const reservationKey = leaseStoreKey("reservation", derivedKey.reservation(computerId));
    return this.grant(
      { kind: "user-control", key: derivedKey.userControl(computerId, botId), holder, ttlMs, computerId, botId },
      [executionKey, reservationKey],
      (now, records) => {
        this.refuseIfReserved(records.get(reservationKey), "take over a screen");
        if (run === "waiting_takeover") return;
        const execution = leaseRecordOf(records.get(executionKey));
        if (run === "active" || isHeld(execution, now)) {
          throw new AgentComputerError(
            "BOT_BUSY",
            `Stop the bot first: bot "${botId}" is running on computer "${computerId}". A takeover is accepted while its run waits for one (waiting_takeover).`,
            { details: { computerId, botId } },
          );
        }
      },
    );
  }

  /** The per-computer checkpoint lease, held from export to `commitRevision`. */
  async acquireCheckpoint(input: { computerId: string; holder: string; ttlMs: number }): Promise<Lease> {
    const { computerId, holder, ttlMs } = parseInput(schemas.acquireCheckpointSchema, input, "acquireCheckpoint input");
    return this.grant({ kind: "checkpoint", key: derivedKey.checkpoint(computerId), holder, ttlMs, computerId });
  }

  /**
   * Reserves the whole computer for maintenance (update, recovery, idle
   * suspension, stop, mode change). One at a time; new execution leases and
   * takeovers are refused with LEASE_HELD while it runs. Leases granted
   * before keep running: the operation drains them itself. Heartbeat with
   * `renew` at least every `interruptAfterMs` (ten minutes).
   */
  async reserve(input: { computerId: string; holder: string; purpose: ReservationPurpose }): Promise<Reservation> {
    const { computerId, holder, purpose } = parseInput(schemas.reserveSchema, input, "reserve input");
    const key = derivedKey.reservation(computerId);
    return (await this.grant({
      kind: "reservation",
      key,
      holder,
      ttlMs: this.interruptAfterMs,
      computerId,
      purpose,
    })) as Reservation;
  }

  /**
   * Extends a live lease by its TTL (a reservation: records a heartbeat).
   * Never revives one: LEASE_LOST once it expired by the store's clock or by
   * the client's own deadline, or was released; FENCED_OUT once a newer
   * token exists. Returns the renewed lease; the old object stays usable.
   */
  async renew<L extends Lease>(lease: L): Promise<L> {
    const meta = this.own(lease, "renew");
    if (this.monotonic() >= meta.localDeadline) throw lost(lease, "its client-side deadline passed");
    return this.transact([meta.storeKey], (now, records, startedAt) => {
      const current = classifyLease(lease, leaseRecordOf(records.get(meta.storeKey)), now);
      const next: LeaseRecord = { ...current, expiresAt: now + current.ttlMs };
      // A released grant stays released: a renewal that raced the release
      // must not bring it back.
      if (meta.localDeadline === Number.NEGATIVE_INFINITY) throw lost(lease, "it was released");
      // The renewed lease shares its grant's bookkeeping with every earlier
      // lease of this grant, so a handle bound to any of them (a fenced
      // machine, a desktop opened on the run's first call) follows the
      // renewal instead of expiring one TTL into the run (docs/architecture.md §6).
      const renewed = this.issue(next, startedAt + next.ttlMs, meta) as L;
      return { result: renewed, write: [bump(records.get(meta.storeKey), meta.storeKey, next)] };
    });
  }

  /**
   * Gives the lease up. Idempotent, and harmless when late: if a newer
   * holder has the key, its lease stays intact. The token is kept, so the
   * next grant continues above it.
   */
  async release(lease: Lease): Promise<void> {
    const meta = this.own(lease, "release");
    meta.localDeadline = Number.NEGATIVE_INFINITY;
    await this.transact([meta.storeKey], (now, records) => {
      const current = leaseRecordOf(records.get(meta.storeKey));
      if (!current || current.token !== lease.token || current.released) return { result: undefined };
      const next: LeaseRecord = { ...current, released: true, expiresAt: Math.min(current.expiresAt, now) };
      return { result: undefined, write: [bump(records.get(meta.storeKey), meta.storeKey, next)] };
    });
  }

  /**
   * Releases a reservation that is `interrupted` (no heartbeat for
   * `interruptAfterMs`), for an operator or recovery job that made sure its
   * workers stopped: `workersStopped` must be `true`, because a stale
   * heartbeat alone proves nothing. LEASE_HELD while it still heartbeats;
   * NOT_FOUND for an id this store never issued. Returns false when it was
   * already released.
   */
  async releaseInterrupted(input: { id: string; workersStopped: true }): Promise<boolean> {
    const { id } = parseInput(schemas.releaseInterruptedSchema, input, "releaseInterrupted input");
    const [, encodedComputer = "", tokenText = ""] = schemas.RESERVATION_ID.exec(id) ?? [];
    const token = Number(tokenText);
    const storeKey = leaseStoreKey("reservation", encodedComputer);
    return this.transact([storeKey], (now, records) => {
      const current = leaseRecordOf(records.get(storeKey));
      if (!current || current.token < token)
        throw new AgentComputerError("NOT_FOUND", `No reservation "${id}" was ever granted by this store.`);
      if (current.token > token || current.released) return { result: false };
      if (now < current.expiresAt) {
        throw new AgentComputerError(
          "LEASE_HELD",
          `Reservation "${id}" (${current.purpose}) still heartbeats; it can be released this way only once interrupted.`,
          { details: { id, interruptsInMs: current.expiresAt - now } },
        );
      }
      const next: LeaseRecord = { ...current, released: true };
      return { result: true, write: [bump(records.get(storeKey), storeKey, next)] };
    });
  }

  /**
   * Which of `botIds` hold a live execution or user-control lease on the
   * computer now, by the store's clock, whichever process holds them: what
   * a runtime asks before deferring a checkpoint or suspending a computer.
   * One read; a grant after it is seen by the next call (a reservation
   * taken first refuses new execution leases, so ask again after reserving).
   */
  async botHolds(computerId: string, botIds: readonly string[]): Promise<BotHolds> {
    const id = parseInput(computerIdSchema, computerId, "computerId");
    const bots = parseInput(z.array(schemas.idSchema).max(10_000), botIds, "botIds");
    const keyOf = (kind: "execution" | "user-control", botId: string) =>
      leaseStoreKey(kind, kind === "execution" ? derivedKey.execution(id, botId) : derivedKey.userControl(id, botId));
    const now = await this.store.now();
    const records = await this.store.read(bots.flatMap((b) => [keyOf("execution", b), keyOf("user-control", b)]));
    const held = (kind: "execution" | "user-control") =>
      bots.filter((b) => isHeld(leaseRecordOf(records.get(keyOf(kind, b))), now));
    const controlTokens = Object.fromEntries(
      bots.map((b) => [b, leaseRecordOf(records.get(keyOf("user-control", b)))?.token ?? 0]),
    );
    return { executing: held("execution"), controlled: held("user-control"), controlTokens };
  }

  /** The running or interrupted reservation of a computer, if any. */
  async getReservation(computerId: string): Promise<ReservationState | undefined> {
    const id = parseInput(computerIdSchema, computerId, "computerId");
    const storeKey = leaseStoreKey("reservation", derivedKey.reservation(id));
    const now = await this.store.now();
    const current = leaseRecordOf((await this.store.read([storeKey])).get(storeKey));
    if (!current || !isHeld(current, now)) return undefined;
    return {
      id: reservationId(current),
      computerId: id,
      holder: current.holder,
      purpose: current.purpose ?? "update",
      token: current.token,
      heartbeatAt: current.expiresAt - current.ttlMs,
      status: now >= current.expiresAt ? "interrupted" : "running",
    };
  }

  /**
   * Throws unless `lease` is still the current, live lease of its key:
   * FENCED_OUT once a newer token exists, LEASE_LOST once it expired (by the
   * store's clock or the client's monotonic deadline) or was released. With
   * `desktop` (a bot id; an execution lease defaults to its own bot), also
   * FENCED_OUT while a person controls that bot's screen.
   *
   * Advisory: a worker can pass this and act late after a pause. The commit
   * (`commitRevision`) is the fence.
   */
  async assertCurrent(lease: Lease, options: { desktop?: string } = {}): Promise<void> {
    const meta = this.own(lease, "assertCurrent");
    const { desktop } = parseInput(schemas.assertOptionsSchema, options, "assertCurrent options");
    const botId = desktop ?? (lease.kind === "execution" ? lease.botId : undefined);
    const screenKey =
      botId !== undefined && lease.computerId !== undefined && lease.kind !== "user-control"
        ? leaseStoreKey("user-control", derivedKey.userControl(lease.computerId, botId))
        : undefined;
    const now = await this.store.now();
    const records = await this.store.read(screenKey ? [meta.storeKey, screenKey] : [meta.storeKey]);
    classifyLease(lease, leaseRecordOf(records.get(meta.storeKey)), now);
    if (this.monotonic() >= meta.localDeadline) throw lost(lease, "its client-side deadline passed");
    if (screenKey && isHeld(leaseRecordOf(records.get(screenKey)), now)) {
      throw new AgentComputerError(
        "FENCED_OUT",
        `A person controls the screen of bot "${botId}"; its desktop actions resume when control is released.`,
        { details: { computerId: lease.computerId, botId } },
      );
    }
  }

  /**
   * Wraps `machine` so every mutating call first runs `assertCurrent(lease)`
   * (desktop actions also check the user-control lease) and carries the
   * lease in its OpContext. Advisory, like `assertCurrent`.
   */
  fenced(machine: Machine, lease: Lease): Machine {
    this.own(lease, "fenced");
    return fenced(machine, lease);
  }

  /** Creates a computer record at revision 0 (or the given one). CONFLICT when it exists. */
  async createComputer(input: {
    computerId: string;
    providerKind: string;
    providerRef?: string | null;
    homeKey: string;
    storageId: string;
    /** Team or private; absent reads as team (`scopeOf`). */
    scope?: ComputerScope;
    /** Whom its running time is attributed to. */
    owner?: ComputerOwner;
    revision?: number;
    wrappedDataKey?: string;
    runs?: ComputerRecord["runs"];
  }): Promise<ComputerRecord> {
    const fields = parseInput(createComputerSchema, input, "createComputer input");
    const storeKey = derivedKey.computer(fields.computerId);
    return this.transact([storeKey], (_now, records) => {
      if (liveComputer(records.get(storeKey)))
        throw new AgentComputerError("CONFLICT", `Computer "${fields.computerId}" already exists.`);
      const value: ComputerValue = { type: "computer", deleted: false, fields: withoutUndefined(fields) };
      const record = bump(records.get(storeKey), storeKey, value);
      return { result: liveComputer(record) as ComputerRecord, write: [record] };
    });
  }

  /** The computer record, or undefined when there is none (or it was deleted). */
  async getComputer(computerId: string): Promise<ComputerRecord | undefined> {
    const id = parseInput(computerIdSchema, computerId, "computerId");
    const storeKey = derivedKey.computer(id);
    return liveComputer((await this.store.read([storeKey])).get(storeKey));
  }

  /**
   * Compare-and-set on the record's `version`: applies `changes` only if the
   * record is still the one the caller read (CONFLICT otherwise). The
   * revision is not among the changes: only `commitRevision` moves it.
   */
  async updateComputer(input: {
    computerId: string;
    expectedVersion: number;
    changes: Partial<Omit<ComputerRecord, "computerId" | "revision" | "version" | "wrappedDataKey">> & {
      wrappedDataKey?: string | null;
    };
  }): Promise<ComputerRecord> {
    const { computerId, expectedVersion, changes } = parseInput(updateComputerSchema, input, "updateComputer input");
    const storeKey = derivedKey.computer(computerId);
    return this.transact([storeKey], (_now, records) => {
      const current = this.expectComputer(records.get(storeKey), computerId, expectedVersion);
      const { wrappedDataKey, ...rest } = changes;
      const fields: Record<string, unknown> = { ...current.fields, ...withoutUndefined(rest) };
      if (wrappedDataKey === null) delete fields.wrappedDataKey;
      else if (wrappedDataKey !== undefined) fields.wrappedDataKey = wrappedDataKey;
      const merged = fields as unknown as Omit<ComputerRecord, "version">;
      if (merged.providerRef !== null && !merged.providerRef.startsWith(`${merged.providerKind}:`)) {
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `Invalid updateComputer input: at "changes.providerRef": expected a ref of kind "${merged.providerKind}"`,
        );
      }
      const record = bump(records.get(storeKey), storeKey, { ...current.value, fields: merged });
      return { result: liveComputer(record) as ComputerRecord, write: [record] };
    });
  }

  /**
   * Deletes the computer record (a tombstone, so versions keep growing).
   * With `expectedVersion`, only that version (CONFLICT otherwise). Returns
   * false when there was nothing to delete. Its leases' tokens are kept.
   */
  async deleteComputer(input: { computerId: string; expectedVersion?: number }): Promise<boolean> {
    const { computerId, expectedVersion } = parseInput(deleteComputerSchema, input, "deleteComputer input");
    const storeKey = derivedKey.computer(computerId);
    return this.transact([storeKey], (_now, records) => {
      if (!liveComputer(records.get(storeKey))) return { result: false };
      if (expectedVersion !== undefined) this.expectComputer(records.get(storeKey), computerId, expectedVersion);
      const tombstone: ComputerValue = { type: "computer", deleted: true };
      return { result: true, write: [bump(records.get(storeKey), storeKey, tombstone)] };
    });
  }

  /**
   * Advances a home's revision from `expectedRevision` to `next` in one
   * commit that also requires `lease` to be the current, unexpired
   * checkpoint lease of the computer: FENCED_OUT when a newer token exists,
   * LEASE_LOST when it expired or was released, CONFLICT when the revision
   * moved. Both conditions are checked together, so a version-only race (A
   * with token 5 reads revision 10, B acquires token 6, A commits 11) is
   * refused. Retrying a commit whose response was lost returns the record
   * instead of failing.
   */
  async commitRevision(input: {
    computerId: string;
    lease: Lease;
    expectedRevision: number;
    next: number;
    /** The store's name for the upload that wins `next` (the record's `committedAttempt`). */
    attempt?: string;
  }): Promise<ComputerRecord> {
    const { computerId, lease, expectedRevision, next, attempt } = parseInput(
      this.commitRevisionSchema,
      input,
      "commitRevision input",
    );
    const meta = this.own(lease, "commitRevision");
    const computerKey = derivedKey.computer(computerId);
    return this.transact([meta.storeKey, computerKey], (now, records) => {
      const computer = computerValueOf(records.get(computerKey));
      const live = liveComputer(records.get(computerKey));
      if (!computer || !live) throw new AgentComputerError("NOT_FOUND", `Computer "${computerId}" does not exist.`);
      const last = computer.lastCommit;
      if (
        last &&
        last.token === lease.token &&
        last.from === expectedRevision &&
        last.to === next &&
        live.revision === next
      )
        return { result: live };
      classifyLease(lease, leaseRecordOf(records.get(meta.storeKey)), now);
      if (live.revision !== expectedRevision) {
        throw new AgentComputerError(
          "CONFLICT",
          `Computer "${computerId}" is at revision ${live.revision}, not ${expectedRevision}; read it again before committing.`,
          { details: { computerId, expectedRevision, revision: live.revision } },
        );
      }
      const { committedAttempt: _previous, ...fields } = computer.fields as Omit<ComputerRecord, "version">;
      const value: ComputerValue = {
        ...computer,
        fields: { ...fields, revision: next, ...(attempt === undefined ? {} : { committedAttempt: attempt }) },
        lastCommit: { token: lease.token, from: expectedRevision, to: next },
      };
      const record = bump(records.get(computerKey), computerKey, value);
      return { result: liveComputer(record) as ComputerRecord, write: [record] };
    });
  }

  // --- internals ---

  /** Reads, decides and commits, re-deciding on every lost compare-and-set. */
  private async transact<T>(
    keys: readonly string[],
    decide: (now: number, records: Map<string, VersionedRecord>, startedAt: number) => Plan<T>,
  ): Promise<T> {
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      // Measured before the store reads its clock, so a deadline derived
      // from it can only be earlier than the store's.
      const startedAt = this.monotonic();
      const now = await this.store.now();
      const records = await this.store.read(keys);
      const plan = decide(now, records, startedAt);
      if (!plan.write || plan.write.length === 0) return plan.result;
      const expect = keys.map((key) => ({ key, version: records.get(key)?.version ?? null }));
      if (await this.store.commit(expect, plan.write)) return plan.result;
    }
    throw new AgentComputerError(
      "CONFLICT",
      `Gave up after ${this.maxAttempts} compare-and-set attempts on ${keys.join(", ")}: too much contention; retry later.`,
      { details: { keys } },
    );
  }

  private async grant(
    spec: GrantSpec,
    guardKeys: readonly string[] = [],
    beforeNewGrant?: (now: number, records: Map<string, VersionedRecord>) => void,
  ): Promise<Lease> {
    const storeKey = leaseStoreKey(spec.kind, spec.key);
    return this.transact([storeKey, ...guardKeys], (now, records, startedAt) => {
      const current = leaseRecordOf(records.get(storeKey));
      let next: LeaseRecord;
      if (current && isHeld(current, now)) {
        const interrupted = current.kind === "reservation" && now >= current.expiresAt;
        if (current.holder !== spec.holder || interrupted) throw held(current, now, interrupted);
        // The same holder again (typically a retry whose first response was
        // lost): same token, fresh TTL. Never a second token.
        next = { ...current, ttlMs: spec.ttlMs, expiresAt: now + spec.ttlMs };
      } else {
        beforeNewGrant?.(now, records);
        next = {
          type: "lease",
          kind: spec.kind,
          key: spec.key,
          holder: spec.holder,
          token: (current?.token ?? 0) + 1,
          ttlMs: spec.ttlMs,
          grantedAt: now,
          expiresAt: now + spec.ttlMs,
          released: false,
          ...(spec.computerId === undefined ? {} : { computerId: spec.computerId }),
          ...(spec.botId === undefined ? {} : { botId: spec.botId }),
          ...(spec.purpose === undefined ? {} : { purpose: spec.purpose }),
        };
      }
      return { result: this.issue(next, startedAt + spec.ttlMs), write: [bump(records.get(storeKey), storeKey, next)] };
    });
  }

  /** Hands out a lease for `record`; `grant` is the bookkeeping of the lease it renews. */
  private issue(record: LeaseRecord, localDeadline: number, grant?: IssuedLease): Lease {
    const lease: Lease | Reservation = Object.freeze({
      kind: record.kind,
      key: record.key,
      holder: record.holder,
      token: record.token,
      ttlMs: record.ttlMs,
      grantedAt: record.grantedAt,
      expiresAt: record.expiresAt,
      ...(record.computerId === undefined ? {} : { computerId: record.computerId }),
      ...(record.botId === undefined ? {} : { botId: record.botId }),
      ...(record.kind === "reservation" ? { id: reservationId(record), purpose: record.purpose ?? "update" } : {}),
    });
    if (grant) {
      grant.localDeadline = Math.max(grant.localDeadline, localDeadline);
      registerLease(lease, grant);
    } else {
      registerLease(lease, { engine: this, storeKey: leaseStoreKey(record.kind, record.key), localDeadline });
    }
    return lease;
  }

  /** The issued lease's bookkeeping, or INVALID_ARGUMENT for anything this engine did not hand out. */
  private own(lease: Lease, what: string): IssuedLease {
    parseInput(this.leaseSchema, lease, `${what} lease`);
    return issuedLease(lease) as IssuedLease;
  }

  private refuseIfReserved(record: VersionedRecord | undefined, what: string): void {
    const reservation = leaseRecordOf(record);
    if (reservation && !reservation.released) {
      throw new AgentComputerError(
        "LEASE_HELD",
        `Cannot ${what}: computer "${reservation.computerId}" is reserved for ${reservation.purpose}; retry when it finishes.`,
        {
          details: { computerId: reservation.computerId, purpose: reservation.purpose, id: reservationId(reservation) },
        },
      );
    }
  }

  private expectComputer(
    record: VersionedRecord | undefined,
    computerId: string,
    expectedVersion: number,
  ): { fields: Omit<ComputerRecord, "version">; value: ComputerValue } {
    const value = computerValueOf(record);
    if (!record || !value || value.deleted || !value.fields)
      throw new AgentComputerError("NOT_FOUND", `Computer "${computerId}" does not exist.`);
    if (record.version !== expectedVersion) {
      throw new AgentComputerError(
        "CONFLICT",
        `Computer "${computerId}" changed (version ${record.version}, expected ${expectedVersion}); read it again.`,
        { details: { computerId, expectedVersion, version: record.version } },
      );
    }
    return { fields: value.fields, value };
  }
}
