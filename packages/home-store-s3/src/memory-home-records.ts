import { AgentComputerError } from "@agent-computer/core";
import type { HomeRecord } from "./home-record.js";
import type { AdvanceRevisionInput, HomeRecords } from "./home-records.js";

/**
 * `HomeRecords` in one process's memory, with the same compare-and-set
 * semantics as the computer records: for tests, examples and single-process
 * tools. Losing the process loses the records, and with them the homes.
 */
export class MemoryHomeRecords implements HomeRecords {
  private readonly records = new Map<string, HomeRecord>();

  /** Adds a home at revision 0 (what `createComputer` does for a computer). CONFLICT when it exists. */
  create(input: { homeKey: string; storageId: string; wrappedDataKey?: string }): HomeRecord {
    if (this.records.has(input.homeKey))
      throw new AgentComputerError("CONFLICT", `Home "${input.homeKey}" already has a record.`);
    const record: HomeRecord = { ...input, revision: 0, version: 1 };
    this.records.set(input.homeKey, record);
    return record;
  }

  /** Forgets the home, as deleting its computer does: its objects become unreadable garbage. */
  remove(homeKey: string): boolean {
    return this.records.delete(homeKey);
  }

  async read(homeKey: string): Promise<HomeRecord | undefined> {
    return this.records.get(homeKey);
  }

  async setWrappedDataKey(input: {
    homeKey: string;
    expectedVersion: number;
    wrappedDataKey: string;
  }): Promise<HomeRecord> {
    const current = this.expect(input.homeKey);
    if (current.version !== input.expectedVersion)
      throw new AgentComputerError("CONFLICT", `Home "${input.homeKey}" changed; read it again.`);
    return this.write({ ...current, wrappedDataKey: input.wrappedDataKey });
  }

  async advanceRevision(input: AdvanceRevisionInput): Promise<void> {
    const current = this.expect(input.homeKey);
    if (current.revision !== input.expectedRevision)
      throw new AgentComputerError(
        "CONFLICT",
        `Home "${input.homeKey}" is at revision ${current.revision}, not ${input.expectedRevision}; another writer committed first.`,
        { details: { homeKey: input.homeKey, expectedRevision: input.expectedRevision, revision: current.revision } },
      );
    const { committedAttempt: _previous, ...rest } = current;
    this.write({
      ...rest,
      revision: input.next,
      ...(input.attempt === undefined ? {} : { committedAttempt: input.attempt }),
    });
  }

  async *list(): AsyncIterable<HomeRecord> {
    yield* [...this.records.values()];
  }

  private expect(homeKey: string): HomeRecord {
    const current = this.records.get(homeKey);
    if (current === undefined) throw new AgentComputerError("NOT_FOUND", `Home "${homeKey}" has no record.`);
    return current;
  }

  private write(record: HomeRecord): HomeRecord {
    const next = { ...record, version: record.version + 1 };
    this.records.set(record.homeKey, next);
    return next;
  }
}
