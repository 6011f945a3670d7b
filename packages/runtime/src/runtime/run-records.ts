import { AgentComputerError } from "@agent-computer/core";
import type { StateStore, VersionedRecord } from "@agent-computer/leases";
import type { StretchEnd } from "./computer-stretches.js";
import type { RunRecord } from "./run-record.js";

const MAX_ATTEMPTS = 32;
/** Records per page: a page is one store record, rewritten when one of its stretches closes. */
export const RUN_RECORD_PAGE_SIZE = 200;

interface RunRecordHead {
  readonly type: "run-record-head";
  /** Pages written so far; the last one takes new records. */
  readonly pages: number;
  /** Computer id -> the page of its open record: at most one open record per computer. */
  readonly open: Record<string, number>;
}
interface RunRecordPage {
  readonly type: "run-record-page";
  readonly records: RunRecord[];
}
type Plan<T> = { result: T; write?: VersionedRecord[] };

/**
 * The deployment's run records in the state store, kept apart from the
 * computer records so deleting a computer, a user or a space keeps its
 * history (with the owner fields cleared) and nothing is capped: records
 * fill pages of `RUN_RECORD_PAGE_SIZE`, listed page by page. Every change
 * is one compare-and-set commit over the head and the pages it touches, so
 * workers sharing the store never open two records for one computer.
 */
export class RunRecords {
  private readonly headKey: string;
  private readonly pagePrefix: string;

  constructor(
    private readonly store: StateStore,
    deployment: string,
  ) {
    const base = `runtime/${encodeURIComponent(deployment)}/run-records`;
    this.headKey = `${base}/head`;
    this.pagePrefix = `${base}/page/`;
  }

  /**
   * Opens `record`; a record of the same computer still open is closed
   * first with `previousEnd` at the new one's start, in the same commit.
   * Opening the id that is already open changes nothing.
   */
  async open(record: Omit<RunRecord, "endedAt" | "endReason">, previousEnd: StretchEnd): Promise<void> {
    await this.transact(
      (head) => [head.pages - 1, head.open[record.computerId]],
      (head, pages) => {
        const openPage = head.open[record.computerId];
        const changed = new Map<number, RunRecord[]>();
        if (openPage !== undefined) {
          const records = [...(pages.get(openPage)?.records ?? [])];
          const at = records.findIndex((r) => r.computerId === record.computerId && r.endedAt === undefined);
          if (records[at]?.recordId === record.recordId) return { result: undefined };
          if (at >= 0)
            records[at] = { ...(records[at] as RunRecord), endedAt: record.startedAt, endReason: previousEnd };
          changed.set(openPage, records);
        }
        let last = Math.max(0, head.pages - 1);
        let records = changed.get(last) ?? [...(pages.get(last)?.records ?? [])];
        if (records.length >= RUN_RECORD_PAGE_SIZE) {
          last = head.pages;
          records = [];
        }
        changed.set(last, [...records, { ...record }]);
        const next: RunRecordHead = {
          type: "run-record-head",
          pages: Math.max(head.pages, last + 1),
          open: { ...head.open, [record.computerId]: last },
        };
        return { result: undefined, write: this.writes(next, changed) };
      },
    );
  }

  /** Closes the computer's open record with `reason` at `endedAt`; false when none was open. */
  async close(computerId: string, reason: StretchEnd, endedAt: number): Promise<boolean> {
    return this.transact(
      (head) => [head.open[computerId]],
      (head, pages) => {
        const page = head.open[computerId];
        if (page === undefined) return { result: false };
        const records = (pages.get(page)?.records ?? []).map((r) =>
          r.computerId === computerId && r.endedAt === undefined ? { ...r, endedAt, endReason: reason } : r,
        );
        const { [computerId]: _closed, ...open } = head.open;
        return { result: true, write: this.writes({ ...head, open }, new Map([[page, records]])) };
      },
    );
  }

  /** Whether the computer has an open record (a stretch whose end was not seen). */
  async isOpen(computerId: string): Promise<boolean> {
    return (await this.head()).open[computerId] !== undefined;
  }

  /**
   * Clears `userId` and `spaceId` of every record of the computer, user or
   * space (`by`): their deletion keeps the history, not who it was.
   * Returns how many records changed.
   */
  async clearOwner(by: { computerId: string } | { userId: string } | { spaceId: string }): Promise<number> {
    const matches = (r: RunRecord) =>
      ("computerId" in by && r.computerId === by.computerId) ||
      ("userId" in by && r.userId === by.userId) ||
      ("spaceId" in by && r.spaceId === by.spaceId);
    let cleared = 0;
    const { pages } = await this.head();
    for (let page = 0; page < pages; page++) {
      cleared += await this.transact(
        () => [page],
        (head, read) => {
          const records = read.get(page)?.records ?? [];
          const hits = records.filter((r) => matches(r) && (r.userId !== null || r.spaceId !== null)).length;
          if (hits === 0) return { result: 0 };
          const next = records.map((r) => (matches(r) ? { ...r, userId: null, spaceId: null } : r));
          return { result: hits, write: this.writes(head, new Map([[page, next]]), false) };
        },
      );
    }
    return cleared;
  }

  /** One page of records, oldest first; `pages` says how many there are. */
  async list(page = 0): Promise<{ records: RunRecord[]; page: number; pages: number }> {
    const head = await this.head();
    const key = this.pageKey(page);
    const value = (await this.store.read([key])).get(key)?.value as RunRecordPage | undefined;
    return { records: [...(value?.records ?? [])], page, pages: head.pages };
  }

  /**
   * Hours each user's computers ran within [from, to); an open record counts
   * up to `now` (capped at `to`). Records whose user was cleared count under
   * `null`. Every page is read: the answer covers the whole history.
   */
  async runHours(window: { from: number; to: number; now: number }): Promise<Map<string | null, number>> {
    const { from, to, now } = window;
    const hours = new Map<string | null, number>();
    const { pages } = await this.head();
    for (let page = 0; page < pages; page++) {
      for (const r of (await this.list(page)).records) {
        const end = Math.min(r.endedAt ?? now, to);
        const ms = end - Math.max(r.startedAt, from);
        if (ms > 0) hours.set(r.userId, (hours.get(r.userId) ?? 0) + ms / 3_600_000);
      }
    }
    return hours;
  }

  private async head(): Promise<RunRecordHead> {
    return headOf((await this.store.read([this.headKey])).get(this.headKey));
  }

  private pageKey(page: number): string {
    return `${this.pagePrefix}${page}`;
  }

  /** The head (unless `withHead` is false) and the changed pages as the next versions of what was read. */
  private writes(head: RunRecordHead, pages: Map<number, RunRecord[]>, withHead = true): VersionedRecord[] {
    const out: VersionedRecord[] = [];
    if (withHead) out.push({ key: this.headKey, version: 0, value: head as unknown as Record<string, unknown> });
    for (const [page, records] of pages)
      out.push({ key: this.pageKey(page), version: 0, value: { type: "run-record-page", records } });
    return out;
  }

  /**
   * Reads the head, then the pages `pagesOf` names, decides, and commits the
   * writes expecting every record read. Versions are filled in here.
   */
  private async transact<T>(
    pagesOf: (head: RunRecordHead) => (number | undefined)[],
    decide: (head: RunRecordHead, pages: Map<number, RunRecordPage>) => Plan<T>,
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const headRecord = (await this.store.read([this.headKey])).get(this.headKey);
      const head = headOf(headRecord);
      const wanted = [...new Set(pagesOf(head).filter((p): p is number => p !== undefined && p >= 0))];
      const read = await this.store.read(wanted.map((p) => this.pageKey(p)));
      const pages = new Map(wanted.map((p) => [p, read.get(this.pageKey(p))?.value as unknown as RunRecordPage]));
      const plan = decide(head, pages);
      if (!plan.write || plan.write.length === 0) return plan.result;
      const versions = new Map<string, number | null>([[this.headKey, headRecord?.version ?? null]]);
      for (const p of wanted) versions.set(this.pageKey(p), read.get(this.pageKey(p))?.version ?? null);
      for (const w of plan.write) if (!versions.has(w.key)) versions.set(w.key, null);
      const write = plan.write.map((w) => ({ ...w, version: (versions.get(w.key) ?? 0) + 1 }));
      const expect = [...versions].map(([key, version]) => ({ key, version }));
      if (await this.store.commit(expect, write)) return plan.result;
    }
    throw new AgentComputerError("CONFLICT", `Gave up after ${MAX_ATTEMPTS} attempts on the run records; retry later.`);
  }
}

function headOf(record: VersionedRecord | undefined): RunRecordHead {
  const value = record?.value as RunRecordHead | undefined;
  return value?.type === "run-record-head" ? value : { type: "run-record-head", pages: 0, open: {} };
}
