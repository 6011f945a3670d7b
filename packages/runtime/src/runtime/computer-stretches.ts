import { randomUUID } from "node:crypto";
import type { ComputerRecord, LeaseEngine } from "@agent-computer/leases";
import type { RunRecord } from "./run-record.js";
import type { RunRecords } from "./run-records.js";

/** Why a stretch of running ended (docs/architecture.md §9). */
export type StretchEnd = NonNullable<ComputerRecord["runs"][number]["endReason"]>;

/** A computer record keeps its most recent stretches only; the run records keep them all. */
const MAX_STRETCH_RECORDS = 50;

/**
 * The stretches a computer ran: each time its machine comes up a stretch
 * opens, and it closes with the reason it ended. The computer record keeps
 * the recent ones (what a worker reads to decide), the deployment's run
 * records every one, attributed to the record's owner (docs/architecture.md §9),
 * unless the provider's running time is not recorded (`recordsRunTime:
 * false`, the app's own host): then `records` is undefined and only the
 * computer record keeps its stretches, which the workers decide by.
 */
export class ComputerStretches {
  constructor(
    private readonly leases: LeaseEngine,
    private readonly clock: () => number,
    readonly records: RunRecords | undefined,
  ) {}

  /**
   * Records that the computer runs on `ref` of `providerKind`: the open
   * stretch closes with `previousEnd` (or as `replaced` when the machine
   * changed) and a new one opens. The same machine without an end keeps its
   * stretch, and the record is returned as it is.
   */
  async open(
    record: ComputerRecord,
    machine: { providerKind: string; ref: string },
    previousEnd: StretchEnd | undefined,
  ): Promise<ComputerRecord> {
    const open = isOpenStretch(record);
    if (open && !previousEnd && record.providerRef === machine.ref) return record;
    const runs = open ? this.ended(record.runs, previousEnd ?? "replaced") : [...record.runs];
    const stretch = { runId: `stretch-${randomUUID()}`, startedAt: this.clock() };
    runs.push(stretch);
    const updated = await this.leases.updateComputer({
      computerId: record.computerId,
      expectedVersion: record.version,
      changes: {
        providerKind: machine.providerKind,
        providerRef: machine.ref,
        runs: runs.slice(-MAX_STRETCH_RECORDS),
      },
    });
    await this.records?.open(runRecordOf(record, stretch, machine.providerKind), previousEnd ?? "replaced");
    return updated;
  }

  /** Closes the computer's open stretch with `reason`; nothing when none is open or the record is gone. */
  async close(computerId: string, reason: StretchEnd): Promise<void> {
    const record = await this.leases.getComputer(computerId);
    const last = record?.runs.at(-1);
    if (record && last && last.endedAt === undefined) {
      await this.leases.updateComputer({
        computerId,
        expectedVersion: record.version,
        changes: { runs: this.ended(record.runs, reason) },
      });
    }
    await this.records?.close(computerId, reason, this.clock());
  }

  /** Whether the record's stretch on its machine is open, in the record and in the run records. */
  async isRecorded(record: ComputerRecord): Promise<boolean> {
    return isOpenStretch(record) && (this.records === undefined || (await this.records.isOpen(record.computerId)));
  }

  /**
   * A machine runs whose start was not recorded (a worker died between
   * bringing it up and writing the start): the stretch opens from
   * `noticedAt`, when the reconciler first saw it so, or only its run
   * record when the record's stretch was written and the run record not.
   */
  async openNoticed(record: ComputerRecord, noticedAt: number): Promise<void> {
    let stretch = isOpenStretch(record) ? record.runs.at(-1) : undefined;
    if (!stretch) {
      stretch = { runId: `stretch-${randomUUID()}`, startedAt: noticedAt };
      await this.leases.updateComputer({
        computerId: record.computerId,
        expectedVersion: record.version,
        changes: { runs: [...record.runs, stretch].slice(-MAX_STRETCH_RECORDS) },
      });
    }
    await this.records?.open(runRecordOf(record, stretch, record.providerKind), "reconciled");
  }

  /** The record's machine is gone: forgets its ref and closes the open stretch as `reconciled`. */
  async forgetMachine(record: ComputerRecord): Promise<void> {
    const open = isOpenStretch(record);
    await this.leases.updateComputer({
      computerId: record.computerId,
      expectedVersion: record.version,
      changes: { providerRef: null, runs: open ? this.ended(record.runs, "reconciled") : [...record.runs] },
    });
    await this.records?.close(record.computerId, "reconciled", this.clock());
  }

  /** `runs` with the last one ended now for `reason`. */
  private ended(runs: ComputerRecord["runs"], reason: StretchEnd): ComputerRecord["runs"][number][] {
    const last = runs.at(-1);
    if (!last) return [];
    return [...runs.slice(0, -1), { ...last, endedAt: this.clock(), endReason: reason }];
  }
}

/** The run record of `stretch`, attributed to the computer's owner. */
function runRecordOf(
  record: ComputerRecord,
  stretch: { runId: string; startedAt: number },
  providerKind: string,
): Omit<RunRecord, "endedAt" | "endReason"> {
  return {
    recordId: stretch.runId,
    computerId: record.computerId,
    providerKind,
    userId: record.owner?.userId ?? null,
    spaceId: record.owner?.spaceId ?? null,
    startedAt: stretch.startedAt,
  };
}

/** The id of the record's open stretch (`runs[].runId`); undefined when none is open. */
export function openStretchId(record: ComputerRecord): string | undefined {
  return isOpenStretch(record) ? record.runs.at(-1)?.runId : undefined;
}

/** The record's last stretch has not ended. */
function isOpenStretch(record: ComputerRecord): boolean {
  return record.runs.length > 0 && record.runs.at(-1)?.endedAt === undefined;
}
