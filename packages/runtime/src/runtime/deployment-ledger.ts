import { AgentComputerError } from "@agent-computer/core";
import type { StateStore, VersionedRecord } from "@agent-computer/leases";
import type { ComputerOperation } from "./computer-operation.js";

const MAX_ATTEMPTS = 32;
const RECENT_OPERATIONS = 100;

interface OperationEntry {
  readonly id: string;
  readonly computerId: string;
  /** A mode change's second computer: it is held by the operation too. */
  readonly targetComputerId?: string;
}
interface ComputerIndex {
  readonly type: "computer-index";
  readonly ids: string[];
}
interface OperationIndex {
  readonly type: "operation-index";
  /** Queued, running or interrupted and neither released nor settled: at most one per computer. */
  readonly open: OperationEntry[];
  /** Finished ones, newest last, so an app can show failures after a restart. */
  readonly recent: OperationEntry[];
}
interface Sightings {
  /** `orphan-sightings`: machines no record owns; `unrecorded-sightings`: running machines whose stretch no record shows. */
  readonly type: "orphan-sightings" | "unrecorded-sightings";
  /** Provider ref -> when the reconciler first saw it so (store clock). */
  readonly firstSeen: Record<string, number>;
}
type StoredOperation = Omit<ComputerOperation, "version"> & { readonly type: "operation" };

/**
 * What a runtime deployment keeps in the state store beside leases and
 * computer records: the ids of its computers (the store has no scan, and the
 * reconciler must find records), its operations and their index, and the
 * orphan machines it has seen. Every change is one compare-and-set commit,
 * retried on a lost race; keys live under `runtime/` so they never collide
 * with the lease engine's.
 */
export class DeploymentLedger {
  private readonly computersKey: string;
  private readonly operationsKey: string;
  private readonly orphansKey: string;
  private readonly unrecordedKey: string;

  constructor(
    private readonly store: StateStore,
    deployment: string,
  ) {
    const base = `runtime/${encodeURIComponent(deployment)}`;
    this.computersKey = `${base}/computers`;
    this.operationsKey = `${base}/operations`;
    this.orphansKey = `${base}/orphans`;
    this.unrecordedKey = `${base}/unrecorded-starts`;
  }

  now(): Promise<number> {
    return this.store.now();
  }

  async computerIds(): Promise<string[]> {
    const index = (await this.store.read([this.computersKey])).get(this.computersKey);
    return [...((index?.value as ComputerIndex | undefined)?.ids ?? [])];
  }

  async addComputer(computerId: string): Promise<void> {
    await this.transact([this.computersKey], (records) => {
      const ids = (records.get(this.computersKey)?.value as ComputerIndex | undefined)?.ids ?? [];
      if (ids.includes(computerId)) return { result: undefined };
      const next: ComputerIndex = { type: "computer-index", ids: [...ids, computerId] };
      return { result: undefined, write: [bump(records, this.computersKey, next)] };
    });
  }

  async removeComputer(computerId: string): Promise<void> {
    await this.transact([this.computersKey], (records) => {
      const ids = (records.get(this.computersKey)?.value as ComputerIndex | undefined)?.ids ?? [];
      if (!ids.includes(computerId)) return { result: undefined };
      const next: ComputerIndex = { type: "computer-index", ids: ids.filter((id) => id !== computerId) };
      return { result: undefined, write: [bump(records, this.computersKey, next)] };
    });
  }

  /**
   * Stores a new queued operation and indexes it in one commit. LEASE_HELD
   * when one of its computers (a mode change has two) already has an open
   * one: one operation per computer.
   */
  async createOperation(operation: Omit<ComputerOperation, "version">): Promise<ComputerOperation> {
    const key = operationKey(operation.id);
    const entry = entryOf(operation);
    return this.transact([this.operationsKey, key], (records) => {
      const index = indexOf(records.get(this.operationsKey));
      for (const computerId of computersOf(entry)) {
        const open = index.open.find((e) => computersOf(e).includes(computerId));
        if (!open) continue;
        throw new AgentComputerError(
          "LEASE_HELD",
          `Computer "${computerId}" already has operation "${open.id}" open; wait for it, or release it if it is interrupted.`,
          { details: { computerId, operationId: open.id } },
        );
      }
      const nextIndex: OperationIndex = { ...index, open: [...index.open, entry] };
      const stored: StoredOperation = { type: "operation", ...operation };
      const record = bump(records, key, stored);
      return {
        result: { ...operation, version: record.version },
        write: [bump(records, this.operationsKey, nextIndex), record],
      };
    });
  }

  async getOperation(id: string): Promise<ComputerOperation | undefined> {
    const key = operationKey(id);
    return operationOf((await this.store.read([key])).get(key));
  }

  /**
   * Applies `change` to the operation if it is still at `expectedVersion`
   * (CONFLICT otherwise: someone else moved it). An operation that leaves
   * the open states moves to the recent list in the same commit.
   */
  async updateOperation(
    id: string,
    expectedVersion: number,
    change: (current: ComputerOperation) => Omit<ComputerOperation, "version">,
  ): Promise<ComputerOperation> {
    const key = operationKey(id);
    return this.transact([this.operationsKey, key], (records) => {
      const current = operationOf(records.get(key));
      if (!current) throw new AgentComputerError("NOT_FOUND", `No operation "${id}".`);
      if (current.version !== expectedVersion) {
        throw new AgentComputerError(
          "CONFLICT",
          `Operation "${id}" changed (version ${current.version}, expected ${expectedVersion}).`,
          { details: { id, version: current.version, expectedVersion } },
        );
      }
      const next = change(current);
      const record = bump(records, key, { type: "operation", ...next } satisfies StoredOperation);
      const write = [record];
      if (!isOpen(next)) {
        const index = indexOf(records.get(this.operationsKey));
        const entry = entryOf(next);
        write.push(
          bump(records, this.operationsKey, {
            type: "operation-index",
            open: index.open.filter((e) => e.id !== id),
            recent: [...index.recent.filter((e) => e.id !== id), entry].slice(-RECENT_OPERATIONS),
          } satisfies OperationIndex),
        );
      }
      return { result: { ...next, version: record.version }, write };
    });
  }

  /** Ids of open operations, then of recent finished ones, optionally of one computer. */
  async operationIds(computerId?: string): Promise<{ open: string[]; recent: string[] }> {
    const index = indexOf((await this.store.read([this.operationsKey])).get(this.operationsKey));
    const pick = (entries: OperationEntry[]) =>
      entries.filter((e) => computerId === undefined || computersOf(e).includes(computerId)).map((e) => e.id);
    return { open: pick(index.open), recent: pick(index.recent) };
  }

  /**
   * Records which of `orphans` were seen when, forgetting refs no longer
   * orphaned, and returns each one's first sighting.
   */
  async sightOrphans(orphans: readonly string[]): Promise<Map<string, number>> {
    return this.sight(this.orphansKey, "orphan-sightings", orphans);
  }

  /**
   * Records the running machines whose stretch no record shows, and returns
   * when each was first seen so; a machine no longer in the list is
   * forgotten (a worker recorded its start meanwhile).
   */
  async sightUnrecordedStarts(refs: readonly string[]): Promise<Map<string, number>> {
    return this.sight(this.unrecordedKey, "unrecorded-sightings", refs);
  }

  private async sight(key: string, type: Sightings["type"], refs: readonly string[]): Promise<Map<string, number>> {
    return this.transact([key], async (records, now) => {
      const previous = (records.get(key)?.value as Sightings | undefined)?.firstSeen ?? {};
      const firstSeen: Record<string, number> = {};
      for (const ref of refs) firstSeen[ref] = previous[ref] ?? now;
      const same = Object.keys(previous).length === refs.length && refs.every((ref) => previous[ref] !== undefined);
      const result = new Map(Object.entries(firstSeen));
      if (same) return { result };
      const next: Sightings = { type, firstSeen };
      return { result, write: [bump(records, key, next)] };
    });
  }

  private async transact<T>(
    keys: readonly string[],
    decide: (
      records: Map<string, VersionedRecord>,
      now: number,
    ) => { result: T; write?: VersionedRecord[] } | Promise<{ result: T; write?: VersionedRecord[] }>,
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const now = await this.store.now();
      const records = await this.store.read(keys);
      const plan = await decide(records, now);
      if (!plan.write || plan.write.length === 0) return plan.result;
      const expect = keys.map((key) => ({ key, version: records.get(key)?.version ?? null }));
      if (await this.store.commit(expect, plan.write)) return plan.result;
    }
    throw new AgentComputerError(
      "CONFLICT",
      `Gave up after ${MAX_ATTEMPTS} compare-and-set attempts on ${keys.join(", ")}; retry later.`,
    );
  }
}

/** Open: the computer is (or may still be) held by this operation. */
export function isOpen(operation: Pick<ComputerOperation, "status" | "released" | "settled">): boolean {
  return (
    operation.status === "queued" ||
    operation.status === "running" ||
    (operation.status === "interrupted" && !operation.released && !operation.settled)
  );
}

function entryOf(operation: Pick<ComputerOperation, "id" | "computerId" | "modeChange">): OperationEntry {
  const target = operation.modeChange?.targetComputerId;
  return { id: operation.id, computerId: operation.computerId, ...(target ? { targetComputerId: target } : {}) };
}

function computersOf(entry: OperationEntry): string[] {
  return entry.targetComputerId ? [entry.computerId, entry.targetComputerId] : [entry.computerId];
}

function operationKey(id: string): string {
  return `operation/${encodeURIComponent(id)}`;
}

function indexOf(record: VersionedRecord | undefined): OperationIndex {
  const value = record?.value as OperationIndex | undefined;
  return value?.type === "operation-index" ? value : { type: "operation-index", open: [], recent: [] };
}

function operationOf(record: VersionedRecord | undefined): ComputerOperation | undefined {
  if (!record) return undefined;
  const { type, ...fields } = record.value as StoredOperation;
  if (type !== "operation") {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The state store holds a record at "${record.key}" that is not an operation.`,
      {
        retryable: false,
      },
    );
  }
  return { ...fields, version: record.version };
}

function bump(records: Map<string, VersionedRecord>, key: string, value: object): VersionedRecord {
  return { key, version: (records.get(key)?.version ?? 0) + 1, value: value as Record<string, unknown> };
}
