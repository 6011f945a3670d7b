import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { ComputerEvent } from "./computer-event.js";
import { createComputerRuntime } from "./computer-runtime.js";

const MINUTE = 60_000;
const T0 = 1_800_000_000_000;

/**
 * Several runtimes on one state store, one home store and one provider:
 * workers of one deployment, each with its own in-process maps, as separate
 * processes would be (test/many-workers runs them as real processes on
 * Docker). The store keeps the real clock so leases renew as in production;
 * the runtimes share an injected clock for idle accounting.
 */
async function workers(count: number, options: { idleMs?: number } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "many-workers-test-"));
  const provider = createFakeProvider();
  const stateStore = new MemoryStateStore();
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const time = { now: T0 };
  const events: (ComputerEvent & { worker: number })[] = [];
  const runtimes = Array.from({ length: count }, (_, worker) =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore,
      clock: () => time.now,
      idleMs: options.idleMs ?? 15 * MINUTE,
      maxActiveMs: 0,
      leaseTtlMs: 5000,
      deployment: "many",
      onEvent: (e) => events.push({ ...e, worker }),
    }),
  );
  const typesOf = (worker: number) => events.filter((e) => e.worker === worker).map((e) => e.type);
  return { runtimes, provider, time, events, typesOf };
}

describe("runtime decisions across workers", () => {
  it("a run's checkpoint defers while a bot runs on another worker; the last one to finish saves", async () => {
    const { runtimes, typesOf } = await workers(2);
    const [a, b] = runtimes as [(typeof runtimes)[0], (typeof runtimes)[0]];
    const alpha = a.startRun({ workspaceId: "w1", botId: "alpha" });
    const beta = b.startRun({ workspaceId: "w1", botId: "beta" });
    await (await alpha.machine()).files.write("bots/alpha/a.txt", new TextEncoder().encode("a"));
    await (await beta.machine()).files.write("bots/beta/b.txt", new TextEncoder().encode("b"));
    await alpha.end("completed");
    expect(typesOf(0)).not.toContain("checkpointing");
    expect(typesOf(0)).toContain("checkpoint-deferred");
    expect((await a.leases.getComputer("team-w1"))?.revision).toBe(0);
    await beta.end("completed");
    expect(typesOf(1)).toContain("checkpointing");
    expect((await a.leases.getComputer("team-w1"))?.revision).toBe(1);
  });

  it("a worker that used the computer earlier does not suspend it under a bot running on another worker", async () => {
    const { runtimes, time } = await workers(2);
    const [a, b] = runtimes as [(typeof runtimes)[0], (typeof runtimes)[0]];
    const first = b.startRun({ workspaceId: "w2", botId: "beta" });
    await first.machine();
    await first.end("completed");
    const running = a.startRun({ workspaceId: "w2", botId: "alpha" });
    await running.machine();
    time.now += 20 * MINUTE; // idle by b's own view
    expect(await b.suspendIdle()).toEqual([]);
    expect(await a.suspendIdle()).toEqual([]);
    await running.end("completed");
    time.now += 20 * MINUTE;
    expect(await b.suspendIdle()).toEqual(["team-w2"]);
    expect((await b.leases.getComputer("team-w2"))?.runs.map((r) => r.endReason)).toEqual(["idle"]);
  });

  it("a worker that never served the computer suspends it once idle (its worker died), and refuses to stop, delete or update it while a bot runs elsewhere", async () => {
    const { runtimes, time } = await workers(2);
    const [a, b] = runtimes as [(typeof runtimes)[0], (typeof runtimes)[0]];
    const run = a.startRun({ workspaceId: "w3", botId: "alpha" });
    await run.machine();
    await expect(b.stopComputer("team-w3")).rejects.toMatchObject({ code: "BOT_BUSY" });
    await expect(b.deleteComputer("team-w3")).rejects.toMatchObject({ code: "BOT_BUSY" });
    await expect(b.operations.requestUpdate({ computerId: "team-w3", owner: "op" })).rejects.toMatchObject({
      code: "BOT_BUSY",
    });
    await run.end("completed");
    time.now += 16 * MINUTE;
    expect(await b.suspendIdle()).toEqual(["team-w3"]);
    expect(await a.suspendIdle()).toEqual([]);
  });

  it("a takeover through another worker is accepted for a waiting run, and the run resumes when it is released there", async () => {
    const { runtimes } = await workers(2);
    const [a, b] = runtimes as [(typeof runtimes)[0], (typeof runtimes)[0]];
    const run = a.startRun({ workspaceId: "w4", botId: "alpha" });
    await run.machine();
    await expect(
      b.takeover({ computerId: "team-w4", botId: "alpha", holder: "p", ttlMs: 60_000 }),
    ).rejects.toMatchObject({ code: "BOT_BUSY" });
    const waiting = run.requestTakeover("2FA");
    await run.waitingRecorded;
    const lease = await b.takeover({ computerId: "team-w4", botId: "alpha", holder: "person", ttlMs: 60_000 });
    await b.releaseTakeover(lease);
    await waiting; // seen in the store by a's run within a poll
    expect(run.state).toBe("active");
    await run.end("completed");
  });
});
