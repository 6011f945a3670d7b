import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "./computer-runtime.js";
import { TAKEOVER_HOLD_MS } from "./suspension-rules.js";

const MINUTE = 60_000;
const T0 = 1_800_000_000_000;

// The runtime's clock is injected: every "minute" below is the clock's, not a wait.
// The store keeps the real clock, so the runs' leases stay live as their
// heartbeats renew them, as in production.
async function setup(options: { billsWhileRunning: boolean; idleMs: number; maxActiveMs: number }) {
  const dataDir = await mkdtemp(join(tmpdir(), "takeover-hold-test-"));
  const time = { now: T0 };
  const runtime = createComputerRuntime({
    provider: createFakeProvider({ capabilities: { billsWhileRunning: options.billsWhileRunning } }),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    clock: () => time.now,
    idleMs: options.idleMs,
    maxActiveMs: options.maxActiveMs,
    leaseTtlMs: 5000,
  });
  const at = (minutes: number) => {
    time.now = T0 + minutes * MINUTE;
  };
  /** A run that used its computer at T0 and asks for a takeover at `minutes`; the request stays pending. */
  const waitingRun = async (workspaceId: string, minutes: number) => {
    const run = runtime.startRun({ workspaceId, botId: "alpha" });
    const machine = await run.machine();
    await machine.files.write("bots/alpha/page.txt", new TextEncoder().encode("the login page"));
    at(minutes);
    const waiting = run.requestTakeover("a CAPTCHA");
    expect(run.state).toBe("waiting_takeover");
    await run.waitingRecorded; // in the store: what every worker decides by
    return { run, waiting, computerId: run.computerId };
  };
  const endReasons = async (computerId: string) =>
    (await runtime.leases.getComputer(computerId))?.runs.map((r) => r.endReason);
  return { runtime, at, waitingRun, endReasons };
}

describe("takeover holds", () => {
  it("on a provider that does not bill, a waiting run holds the computer 30 minutes after asking, then it suspends while the run waits", async () => {
    const { runtime, at, waitingRun, endReasons } = await setup({
      billsWhileRunning: false,
      idleMs: 15 * MINUTE,
      maxActiveMs: 0,
    });
    expect(TAKEOVER_HOLD_MS).toBe(30 * MINUTE);
    const { run, waiting, computerId } = await waitingRun("hold1", 5);
    at(5 + 20); // idle for 20 minutes, past idleMs: the hold keeps it up
    expect(await runtime.suspendIdle()).toEqual([]);
    at(5 + 29);
    expect(await runtime.suspendIdle()).toEqual([]);
    at(5 + 30); // the hold is over
    expect(await runtime.suspendIdle()).toEqual([computerId]);
    expect(await endReasons(computerId)).toEqual(["idle"]);
    expect(run.state).toBe("waiting_takeover");

    // The person comes later: the takeover resumes the computer with the page's files there.
    at(5 + 45);
    const lease = await runtime.takeover({ computerId, botId: "alpha", holder: "person", ttlMs: 60_000 });
    await runtime.desktopFor({ computerId, botId: "alpha" });
    await runtime.releaseTakeover(lease);
    await waiting;
    expect(run.state).toBe("active");
    const machine = await run.machine();
    expect(new TextDecoder().decode(await machine.files.read("bots/alpha/page.txt"))).toBe("the login page");
    await run.end("completed");
  });

  it("on a billing provider the normal idle timer applies, restarted by the request", async () => {
    const { runtime, at, waitingRun, endReasons } = await setup({
      billsWhileRunning: true,
      idleMs: 15 * MINUTE,
      maxActiveMs: 0,
    });
    const { run, waiting, computerId } = await waitingRun("hold2", 10);
    at(10 + 14); // 24 minutes after the last use, 14 after the request
    expect(await runtime.suspendIdle()).toEqual([]);
    at(10 + 15);
    expect(await runtime.suspendIdle()).toEqual([computerId]);
    expect(await endReasons(computerId)).toEqual(["idle"]);
    expect(run.state).toBe("waiting_takeover");
    const lease = await runtime.takeover({ computerId, botId: "alpha", holder: "person", ttlMs: 60_000 });
    await runtime.releaseTakeover(lease);
    await waiting;
    await run.end("failed");
  });

  it("on a billing provider a waiting run does not escape the active-time cap", async () => {
    const { runtime, at, waitingRun, endReasons } = await setup({
      billsWhileRunning: true,
      idleMs: 10 * 60 * MINUTE,
      maxActiveMs: 30 * MINUTE,
    });
    const { run, waiting, computerId } = await waitingRun("hold3", 20);
    at(29);
    expect(await runtime.suspendIdle()).toEqual([]);
    at(30);
    expect(await runtime.suspendIdle()).toEqual([computerId]);
    expect(await endReasons(computerId)).toEqual(["active_limit"]);
    const lease = await runtime.takeover({ computerId, botId: "alpha", holder: "person", ttlMs: 60_000 });
    await runtime.releaseTakeover(lease);
    await waiting;
    await run.end("completed");
  });

  it("an executing run still keeps the computer up past idle and the cap", async () => {
    const { runtime, at } = await setup({ billsWhileRunning: true, idleMs: 15 * MINUTE, maxActiveMs: 30 * MINUTE });
    const run = runtime.startRun({ workspaceId: "hold4", botId: "alpha" });
    await run.machine();
    at(120);
    expect(await runtime.suspendIdle()).toEqual([]);
    await run.end("completed");
  });
});
