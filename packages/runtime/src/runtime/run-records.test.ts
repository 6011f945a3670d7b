import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "./computer-runtime.js";
import type { RunRecord } from "./run-record.js";
import { RUN_RECORD_PAGE_SIZE, RunRecords } from "./run-records.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = 1_800_000_000_000;

async function setup(
  options: { billsWhileRunning?: boolean; recordsRunTime?: boolean; idleMs?: number; maxActiveMs?: number } = {},
) {
  const dataDir = await mkdtemp(join(tmpdir(), "run-records-test-"));
  const provider = createFakeProvider({
    capabilities: {
      ...(options.billsWhileRunning ? { billsWhileRunning: true } : {}),
      ...(options.recordsRunTime === undefined ? {} : { recordsRunTime: options.recordsRunTime }),
    },
  });
  const time = { now: T0 };
  const stateStore = new MemoryStateStore({ clock: () => time.now });
  const runtime = createComputerRuntime({
    provider,
    stateStore,
    homeStore: new LocalAgentHomeStore({ dataDir }),
    clock: () => time.now,
    idleMs: options.idleMs ?? MINUTE,
    maxActiveMs: options.maxActiveMs ?? 0,
    leaseTtlMs: 5000,
    deployment: "records-test",
    operations: { heartbeatMs: 1000 },
  });
  const all = async (): Promise<RunRecord[]> => {
    const out: RunRecord[] = [];
    for (let page = 0, pages = 1; page < pages; page++) {
      const listed = await runtime.runRecords.list(page);
      pages = listed.pages;
      out.push(...listed.records);
    }
    return out;
  };
  /** One completed run of `botId` now; returns the machine it used. */
  const runOnce = async (workspaceId: string, botId = "alpha", userId = "user-1") => {
    const run = runtime.startRun({ workspaceId, botId, userId });
    const machine = await run.machine();
    await run.end("completed");
    return machine;
  };
  const destroyBehind = async (computerId: string) => {
    const record = await runtime.leases.getComputer(computerId);
    await ((await provider.reconnect(record?.providerRef as ProviderRef)) as Machine).destroy();
  };
  return { runtime, provider, time, stateStore, all, runOnce, destroyBehind };
}

const shape = (r: RunRecord) => ({
  startedAt: r.startedAt - T0,
  endedAt: r.endedAt === undefined ? undefined : r.endedAt - T0,
  endReason: r.endReason,
});

describe("run records", () => {
  it("records stopped, idle, gone, replaced, reconciled and deleted stretches with their times, owner cleared on deletion", async () => {
    const { runtime, time, all, runOnce, destroyBehind } = await setup();
    const id = "team-s1";
    await runOnce("s1");
    time.now = T0 + HOUR;
    await runtime.stopComputer(id); // stopped at 1 h
    time.now = T0 + 2 * HOUR;
    await runOnce("s1"); // opens at 2 h
    time.now = T0 + 2 * HOUR + 2 * MINUTE;
    expect(await runtime.suspendIdle()).toEqual([id]); // idle at 2 h 2 min
    time.now = T0 + 3 * HOUR;
    await runOnce("s1");
    await destroyBehind(id);
    time.now = T0 + 4 * HOUR;
    await runOnce("s1"); // the machine is gone: closed as gone at 4 h, a new one opens
    time.now = T0 + 5 * HOUR;
    const update = await runtime.operations.requestUpdate({ computerId: id, owner: "op" });
    expect((await runtime.operations.waitFor(update.id)).status).toBe("succeeded"); // replaced at 5 h
    await destroyBehind(id);
    time.now = T0 + 6 * HOUR;
    expect((await runtime.reconcile()).reconciled).toEqual([id]); // reconciled at 6 h
    time.now = T0 + 7 * HOUR;
    await runOnce("s1");

    // Run hours, by hand: 1 + 2/60 + 1 + 1 + 1 hours closed, and the open stretch from 7 h to 7.5 h.
    time.now = T0 + 7.5 * HOUR;
    const hours = await runtime.runHours({ from: T0 });
    expect(hours.get("user-1")).toBeCloseTo(4 + 2 / 60 + 0.5, 9);
    expect([...hours.keys()]).toEqual(["user-1"]);

    time.now = T0 + 8 * HOUR;
    expect(await runtime.deleteComputer(id)).toBe(true);
    const records = await all();
    expect(records.map(shape)).toEqual([
      { startedAt: 0, endedAt: HOUR, endReason: "stopped" },
      { startedAt: 2 * HOUR, endedAt: 2 * HOUR + 2 * MINUTE, endReason: "idle" },
      { startedAt: 3 * HOUR, endedAt: 4 * HOUR, endReason: "gone" },
      { startedAt: 4 * HOUR, endedAt: 5 * HOUR, endReason: "replaced" },
      { startedAt: 5 * HOUR, endedAt: 6 * HOUR, endReason: "reconciled" },
      { startedAt: 7 * HOUR, endedAt: 8 * HOUR, endReason: "deleted" },
    ]);
    // Kept after deletion, attributed to no one.
    expect(records.every((r) => r.computerId === id && r.userId === null && r.spaceId === null)).toBe(true);
    expect(await runtime.leases.getComputer(id)).toBeUndefined();
    expect((await runtime.runHours({ from: T0 })).get(null)).toBeCloseTo(5 + 2 / 60, 9);
  }, 30_000);

  it("records active_limit on a billing provider, with the owner and space the run gave", async () => {
    const { runtime, time, all, runOnce } = await setup({
      billsWhileRunning: true,
      idleMs: 10 * HOUR,
      maxActiveMs: 30 * MINUTE,
    });
    await runOnce("s2", "alpha", "user-2");
    time.now = T0 + 31 * MINUTE;
    expect(await runtime.suspendIdle()).toEqual(["team-s2"]);
    const [record] = await all();
    expect(record).toMatchObject({
      computerId: "team-s2",
      providerKind: "fake",
      userId: "user-2",
      spaceId: "s2",
      startedAt: T0,
      endedAt: T0 + 31 * MINUTE,
      endReason: "active_limit",
    });
  });

  it("writes no run record where the provider's running time is not recorded (a host computer), and still tracks stretches", async () => {
    const { runtime, time, all, runOnce, destroyBehind } = await setup({ recordsRunTime: false });
    const id = "team-host";
    await runOnce("host");
    time.now = T0 + HOUR;
    await runtime.stopComputer(id);
    time.now = T0 + 2 * HOUR;
    await runOnce("host");
    await destroyBehind(id);
    time.now = T0 + 3 * HOUR;
    expect((await runtime.reconcile()).reconciled).toEqual([id]);
    expect(await all()).toEqual([]);
    expect((await runtime.runHours({ from: T0 })).size).toBe(0);
    // The computer record still keeps each stretch and its end: what the workers decide by.
    const record = await runtime.leases.getComputer(id);
    expect(record?.runs.map((r) => r.endReason)).toEqual(["stopped", "reconciled"]);
    expect(await runtime.deleteComputer(id)).toBe(true);
    expect(await all()).toEqual([]);
  });

  it("deleting a user or a space keeps their records with the owner fields cleared", async () => {
    const { runtime, all, runOnce } = await setup();
    await runOnce("s3", "alpha", "user-3");
    await runOnce("s4", "alpha", "user-4");
    expect(await runtime.forgetOwner({ userId: "user-3" })).toBe(1);
    expect(await runtime.forgetOwner({ spaceId: "s4" })).toBe(1);
    expect(await runtime.forgetOwner({ spaceId: "s4" })).toBe(0);
    expect((await all()).map((r) => [r.computerId, r.userId, r.spaceId, r.endReason])).toEqual([
      ["team-s3", null, null, undefined],
      ["team-s4", null, null, undefined],
    ]);
  });
});

describe("RunRecords on a state store", () => {
  const open = (computerId: string, recordId: string, userId: string | null, startedAt: number) => ({
    recordId,
    computerId,
    providerKind: "fake",
    userId,
    spaceId: "space",
    startedAt,
  });

  it("pages the whole history instead of capping it", async () => {
    const records = new RunRecords(new MemoryStateStore(), "paging");
    const total = 2 * RUN_RECORD_PAGE_SIZE + 50;
    for (let i = 0; i < total; i++) {
      const computerId = `c${i % 3}`;
      await records.open(open(computerId, `r${i}`, "u", i * 10), "replaced");
      await records.close(computerId, "stopped", i * 10 + 5);
    }
    const first = await records.list(0);
    expect(first.pages).toBe(3);
    const pages = await Promise.all([0, 1, 2].map((p) => records.list(p)));
    expect(pages.map((p) => p.records.length)).toEqual([RUN_RECORD_PAGE_SIZE, RUN_RECORD_PAGE_SIZE, 50]);
    const ids = pages.flatMap((p) => p.records.map((r) => r.recordId));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => `r${i}`));
    expect(
      pages.flatMap((p) => p.records).every((r) => r.endReason === "stopped" && r.endedAt === r.startedAt + 5),
    ).toBe(true);
  });

  it("never keeps two records of one computer open, also when workers open at once", async () => {
    const store = new MemoryStateStore();
    const workers = [0, 1, 2, 3].map(() => new RunRecords(store, "race"));
    await Promise.all(workers.map((w, i) => w.open(open("c", `r${i}`, "u", 100 + i), "replaced")));
    const { records } = await workers[0]!.list(0);
    expect(records).toHaveLength(4);
    expect(records.filter((r) => r.endedAt === undefined)).toHaveLength(1);
    expect(records.filter((r) => r.endReason === "replaced")).toHaveLength(3);
  });

  it("counts run hours per user over a window, open records up to now (hand-computed)", async () => {
    const records = new RunRecords(new MemoryStateStore(), "hours");
    await records.open(open("a", "a1", "u1", 0), "replaced");
    await records.close("a", "stopped", 2 * HOUR);
    await records.open(open("b", "b1", "u2", 1 * HOUR), "replaced");
    await records.close("b", "idle", 4 * HOUR);
    await records.open(open("c", "c1", "u3", 3 * HOUR), "replaced");
    await records.close("c", "gone", 3.5 * HOUR);
    await records.clearOwner({ userId: "u3" });
    await records.open(open("a", "a2", "u1", 5 * HOUR), "replaced"); // still open
    await records.open(open("d", "d1", "u4", 9 * HOUR), "replaced"); // opens after now: not counted
    // Window [1 h, 10 h), now 6 h: u1 = (2 - 1) + (6 - 5) = 2; u2 = 4 - 1 = 3; cleared = 0.5.
    const hours = await records.runHours({ from: 1 * HOUR, to: 10 * HOUR, now: 6 * HOUR });
    expect(Object.fromEntries(hours)).toEqual({ u1: 2, u2: 3, null: 0.5 });
    // A window ending before now cuts the open record at its end: [0, 5.5 h) gives u1 = 2 + 0.5.
    expect((await records.runHours({ from: 0, to: 5.5 * HOUR, now: 6 * HOUR })).get("u1")).toBe(2.5);
  });
});
