import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { ComputerEvent } from "./computer-event.js";
import { createComputerRuntime } from "./computer-runtime.js";

async function setup(options: { billsWhileRunning?: boolean; idleMs?: number; maxActiveMs?: number } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "runtime-test-"));
  const provider = createFakeProvider({
    capabilities: options.billsWhileRunning ? { billsWhileRunning: true } : {},
  });
  const stateStore = new MemoryStateStore();
  const homeStore = new LocalAgentHomeStore({ dataDir });
  let now = 1_000_000;
  const events: ComputerEvent[] = [];
  const make = () =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore,
      clock: () => now,
      idleMs: options.idleMs ?? 60_000,
      maxActiveMs: options.maxActiveMs ?? 0,
      leaseTtlMs: 5000,
      onEvent: (e) => events.push(e),
    });
  return { provider, stateStore, homeStore, events, runtime: make(), make, advance: (ms: number) => (now += ms) };
}

describe("computer runtime on the fake provider", () => {
  it("starts nothing until a run first uses the computer, then puts the bot in bots/<bot-id>", async () => {
    const { runtime, events } = await setup();
    const run = runtime.startRun({ workspaceId: "ws1", botId: "alpha" });
    expect(events).toEqual([]);
    const machine = await run.machine();
    const listed = await machine.files.list("");
    expect(listed.map((e) => e.name)).toEqual(["bots", "shared"]);
    expect(run.workdir).toBe("bots/alpha");
    expect(events.map((e) => e.type)).toEqual(["provisioning", "ready"]);
    await run.end("completed");
    expect(events.map((e) => e.type)).toEqual(["provisioning", "ready", "checkpointing"]);
    expect(events.at(-1)?.detail.revision).toBe(1);
  });

  it("replaces a destroyed machine whose home was wiped and restores the bot's file first", async () => {
    const { runtime, make, provider, events } = await setup();
    const first = runtime.startRun({ workspaceId: "ws2", botId: "alpha" });
    const machine = await first.machine();
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 7) % 256);
    await machine.files.write("bots/alpha/report.bin", bytes);
    await first.end("completed");
    const record = await runtime.leases.getComputer("team-ws2");
    // Destroy the machine behind the live computer and wipe its home.
    const stale = (await provider.reconnect(record!.providerRef as `${string}:${string}`)) as Machine;
    await rm(stale.workspacePath, { recursive: true, force: true });
    await stale.destroy();

    events.length = 0;
    const again = make().startRun({ workspaceId: "ws2", botId: "alpha" });
    const replacement = await again.machine();
    expect(replacement.ref).not.toBe(record!.providerRef);
    expect(await replacement.files.read("bots/alpha/report.bin")).toEqual(bytes);
    expect(events.map((e) => e.type)).toEqual(["provisioning", "restoring", "replaced", "ready"]);
    expect(events[1]?.detail.revision).toBe(1);
    const after = await runtime.leases.getComputer("team-ws2");
    expect(after?.runs.map((r) => r.endReason)).toEqual(["gone", undefined]);
    await again.end("completed");
  });

  it("lets two bots act at once and refuses a second driver of one bot with BOT_BUSY", async () => {
    const { runtime } = await setup();
    const a = runtime.startRun({ workspaceId: "ws3", botId: "alpha" });
    const b = runtime.startRun({ workspaceId: "ws3", botId: "beta" });
    const [ma, mb] = await Promise.all([a.machine(), b.machine()]);
    const [ra, rb] = await Promise.all([
      ma.exec({ shell: "sleep 0.2; echo a > bots/alpha/out" }),
      mb.exec({ shell: "sleep 0.2; echo b > bots/beta/out" }),
    ]);
    expect([ra.exitCode, rb.exitCode]).toEqual([0, 0]);
    const second = runtime.startRun({ workspaceId: "ws3", botId: "alpha" });
    await expect(second.machine()).rejects.toMatchObject({ code: "BOT_BUSY" });
    await Promise.all([a.end("completed"), b.end("failed")]);
  });

  it("defers a run's checkpoint while another bot works; the last one to finish saves", async () => {
    const { runtime, events } = await setup();
    const a = runtime.startRun({ workspaceId: "ws4", botId: "alpha" });
    const b = runtime.startRun({ workspaceId: "ws4", botId: "beta" });
    await (await a.machine()).files.write("bots/alpha/a.txt", new TextEncoder().encode("from alpha"));
    await (await b.machine()).files.write("bots/beta/b.txt", new TextEncoder().encode("from beta"));
    await a.end("completed");
    expect(events.filter((e) => e.type === "checkpointing")).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "checkpoint-deferred", detail: { botId: "alpha", waitingFor: 1 } });
    await b.end("completed");
    const saves = events.filter((e) => e.type === "checkpointing");
    expect(saves).toHaveLength(1);
    expect(saves[0]?.detail.reason).toBe("run-completed");
  });

  it("refuses a takeover while the bot runs, accepts it while the run waits for one, and defers the save", async () => {
    const { runtime, events } = await setup();
    const run = runtime.startRun({ workspaceId: "ws5", botId: "alpha" });
    await run.machine();
    const takeover = { computerId: "team-ws5", botId: "alpha", holder: "person-1", ttlMs: 10_000 };
    await expect(runtime.takeover(takeover)).rejects.toMatchObject({ code: "BOT_BUSY" });
    run.state = "waiting_takeover";
    const control = await runtime.takeover(takeover);
    await run.end("completed");
    expect(events.at(-1)?.type).toBe("checkpoint-deferred");
    await runtime.releaseTakeover(control);
    expect(events.at(-1)).toMatchObject({ type: "checkpointing", detail: { reason: "takeover-ended" } });
  });

  it("suspends an idle computer by the injected clock, but not while a run executes or a person controls it", async () => {
    const { runtime, advance, events } = await setup({ idleMs: 60_000 });
    const run = runtime.startRun({ workspaceId: "ws6", botId: "alpha" });
    await run.machine();
    advance(120_000);
    expect(await runtime.suspendIdle()).toEqual([]); // a run executes
    await run.end("completed");
    const control = await runtime.takeover({ computerId: "team-ws6", botId: "alpha", holder: "p", ttlMs: 10_000 });
    advance(120_000);
    expect(await runtime.suspendIdle()).toEqual([]); // a person controls a screen
    await runtime.releaseTakeover(control);
    advance(30_000);
    expect(await runtime.suspendIdle()).toEqual([]); // not idle long enough yet
    advance(31_000);
    expect(await runtime.suspendIdle()).toEqual(["team-ws6"]);
    expect(events.at(-1)).toMatchObject({ type: "suspending", detail: { reason: "idle" } });
    const record = await runtime.leases.getComputer("team-ws6");
    expect(record?.runs.at(-1)?.endReason).toBe("idle");
    // The next use resumes the same machine (stop keeps it) in a new stretch.
    const next = runtime.startRun({ workspaceId: "ws6", botId: "alpha" });
    await next.machine();
    expect(events.at(-1)).toMatchObject({ type: "ready", detail: { how: "reconnected" } });
    expect((await runtime.leases.getComputer("team-ws6"))?.runs).toHaveLength(2);
    await next.end("completed");
  });

  it("counts an open screen's use (noteUse) on every worker: the idle time runs from the last note", async () => {
    const { runtime, advance, events } = await setup({ idleMs: 60_000 });
    const run = runtime.startRun({ workspaceId: "ws9", botId: "alpha" });
    await run.machine();
    await run.end("completed");
    advance(50_000);
    await runtime.noteUse("team-ws9");
    advance(50_000);
    expect(await runtime.suspendIdle()).toEqual([]);
    advance(11_000);
    expect(await runtime.suspendIdle()).toEqual(["team-ws9"]);
    // The fake computer has no background-work scanner: the scan cannot tell, so it holds nothing, and says so.
    expect(events.at(-1)).toMatchObject({ type: "suspending", detail: { reason: "idle" } });
    expect(String(events.at(-1)?.detail.backgroundScan)).toMatch(/^unknown: /);
    await expect(runtime.noteUse("team-none")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("suspends at the active limit only on providers that bill while running", async () => {
    for (const bills of [false, true]) {
      const { runtime, advance } = await setup({ billsWhileRunning: bills, idleMs: 0, maxActiveMs: 7_200_000 });
      const run = runtime.startRun({ workspaceId: `ws7-${bills}`, botId: "alpha" });
      await run.machine();
      await run.end("completed");
      advance(7_200_000);
      expect(await runtime.suspendIdle()).toEqual(bills ? [`team-ws7-${bills}`] : []);
      if (bills) {
        const record = await runtime.leases.getComputer(`team-ws7-${bills}`);
        expect(record?.runs.at(-1)?.endReason).toBe("active_limit");
      }
    }
  });

  it("stops a computer after saving it, and refuses while bots run", async () => {
    const { runtime, events } = await setup();
    const run = runtime.startRun({ workspaceId: "ws8", botId: "alpha", private: true });
    await run.machine();
    await expect(runtime.stopComputer("private-ws8-alpha")).rejects.toMatchObject({ code: "BOT_BUSY" });
    await run.end("completed");
    events.length = 0;
    await runtime.stopComputer("private-ws8-alpha");
    expect(events.map((e) => [e.type, e.detail.reason])).toEqual([
      ["checkpointing", "stop"],
      ["suspending", "stopped"],
    ]);
    for (const e of events) expect(e.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("gives a person a bot's desktop on an existing computer, starting it when stopped; NOT_FOUND for none", async () => {
    const { runtime } = await setup();
    await expect(runtime.desktopFor({ computerId: "team-ws9", botId: "alpha" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    const run = runtime.startRun({ workspaceId: "ws9", botId: "alpha" });
    await run.machine();
    await run.end("completed");
    await runtime.stopComputer("team-ws9");
    const desktop = await runtime.desktopFor({ computerId: "team-ws9", botId: "alpha" });
    expect(desktop.botId).toBe("alpha");
    expect((await desktop.observe()).width).toBeGreaterThan(0);
  });

  it("hands out the running machine without starting a stopped one", async () => {
    const { runtime, events } = await setup();
    expect(await runtime.runningMachine("team-ws10")).toBeUndefined();
    const run = runtime.startRun({ workspaceId: "ws10", botId: "alpha" });
    const machine = await run.machine();
    expect((await runtime.runningMachine("team-ws10"))?.ref).toBe(machine.ref);
    await run.end("completed");
    await runtime.stopComputer("team-ws10");
    const seen = events.length;
    expect(await runtime.runningMachine("team-ws10")).toBeUndefined();
    expect(events.length).toBe(seen); // nothing started, reconnected or replaced
  });

  it("refuses bad input with INVALID_ARGUMENT", async () => {
    const { runtime } = await setup();
    expect(() => runtime.startRun({ workspaceId: "../x", botId: "a" })).toThrow(/"workspaceId"/);
    expect(() => createComputerRuntime({} as never)).toThrow(/"provider"/);
    await expect(runtime.startRun({ workspaceId: "w", botId: "a" }).end("maybe" as never)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });
});

describe("takeover requests", () => {
  it("redact secrets a model quoted in its reason before the event leaves the runtime", async () => {
    const { runtime, events } = await setup();
    const run = runtime.startRun({ workspaceId: "ws9", botId: "alpha" });
    await run.machine();
    const waiting = run.requestTakeover("Log in with PASSWORD=hunter2-horse please");
    await new Promise((resolve) => setTimeout(resolve, 10));
    const requested = events.find((e) => e.type === "takeover-requested");
    expect(requested?.detail.reason).toBe("Log in with PASSWORD=[REDACTED] please");
    run.takeoverEnded();
    await waiting;
    await run.end("completed");
  });
});
