import { randomUUID } from "node:crypto";
import { parseInput } from "@agent-computer/core";
import type { ComputerRecord, LeaseEngine } from "@agent-computer/leases";
import { z } from "zod";
import type { ComputerHomeRecordsOptions } from "./computer-home-records-options.js";
import type { HomeRecord } from "./home-record.js";
import type { AdvanceRevisionInput, HomeRecords } from "./home-records.js";

const optionsSchema = z
  .object({
    leases: z.custom<LeaseEngine>((v) => typeof (v as LeaseEngine)?.commitRevision === "function", {
      message: "expected a LeaseEngine",
    }),
    computerIdOf: z.custom<(homeKey: string) => string>((v) => typeof v === "function").optional(),
    computerIds: z.custom<() => Iterable<string>>((v) => typeof v === "function", { message: "expected a function" }),
    holder: z.string().min(1).optional(),
  })
  .strict();

/**
 * `HomeRecords` on the lease engine's computer records (docs/architecture.md §6): the
 * revision is the record's `revision`, the wrapped data key its
 * `wrappedDataKey`, so deleting the computer (`deleteComputer`) makes its
 * objects unreadable and hands them to the reconciler.
 */
export class ComputerHomeRecords implements HomeRecords {
  private readonly leases: LeaseEngine;
  private readonly computerIdOf: (homeKey: string) => string;
  private readonly computerIds: () => Iterable<string> | AsyncIterable<string>;
  private readonly holder: string;

  constructor(options: ComputerHomeRecordsOptions) {
    const parsed = parseInput(optionsSchema, options, "ComputerHomeRecordsOptions");
    this.leases = parsed.leases;
    this.computerIdOf = parsed.computerIdOf ?? ((homeKey) => homeKey);
    this.computerIds = options.computerIds;
    this.holder = parsed.holder ?? "object-home-store";
  }

  async read(homeKey: string): Promise<HomeRecord | undefined> {
    const record = await this.leases.getComputer(this.computerIdOf(homeKey));
    // A computer re-pointed at another home no longer owns this one.
    return record && record.homeKey === homeKey ? homeRecordOf(record) : undefined;
  }

  async setWrappedDataKey(input: {
    homeKey: string;
    expectedVersion: number;
    wrappedDataKey: string;
  }): Promise<HomeRecord> {
    const record = await this.leases.updateComputer({
      computerId: this.computerIdOf(input.homeKey),
      expectedVersion: input.expectedVersion,
      changes: { wrappedDataKey: input.wrappedDataKey },
    });
    return homeRecordOf(record);
  }

  async advanceRevision(input: AdvanceRevisionInput): Promise<void> {
    const computerId = this.computerIdOf(input.homeKey);
    // Without the caller's lease the store takes one itself, so even this path is fenced. A holder
    // name per call: two racing writers with one name would share a token, and the engine would take
    // the second commit for a retry of the first.
    const holder = `${this.holder}:${randomUUID()}`;
    const lease = await this.leases.acquireCheckpoint({ computerId, holder, ttlMs: 60_000 });
    try {
      await this.leases.commitRevision({
        computerId,
        lease,
        expectedRevision: input.expectedRevision,
        next: input.next,
        ...(input.attempt === undefined ? {} : { attempt: input.attempt }),
      });
    } finally {
      await this.leases.release(lease).catch(() => {});
    }
  }

  async *list(): AsyncIterable<HomeRecord> {
    for await (const computerId of this.computerIds()) {
      const record = await this.leases.getComputer(computerId);
      if (record) yield homeRecordOf(record);
    }
  }
}

function homeRecordOf(record: ComputerRecord): HomeRecord {
  return {
    homeKey: record.homeKey,
    storageId: record.storageId,
    revision: record.revision,
    ...(record.committedAttempt === undefined ? {} : { committedAttempt: record.committedAttempt }),
    ...(record.wrappedDataKey === undefined ? {} : { wrappedDataKey: record.wrappedDataKey }),
    version: record.version,
  };
}
