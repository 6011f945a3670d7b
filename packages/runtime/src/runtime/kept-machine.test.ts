import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { type ComputerRuntime, createComputerRuntime } from "./computer-runtime.js";

/**
 * Two workers of one deployment (one state store, one home store) on the
 * fake provider, whose `reconnect` answers a new object every time. Each
 * worker's provider is a spy over that provider that only counts its
 * reconnects: a count that grows proves the runtime asked the provider
 * again (a liveness check), so an object that stays the same was kept, not
 * merely handed out from the last second's check.
 */
async function workers() {
  const dataDir = await mkdtemp(join(tmpdir(), "kept-machine-test-"));
  const provider = createFakeProvider();
  const stateStore = new MemoryStateStore();
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const reconnects = [0, 0];
  const make = (worker: number) => {
    const counted: SandboxProvider = {
      ...provider,
      reconnect: (ref, ctx) => {
        reconnects[worker] = (reconnects[worker] ?? 0) + 1;
        return provider.reconnect(ref, ctx);
      },
    };
    return createComputerRuntime({ provider: counted, stateStore, homeStore, idleMs: 60_000, leaseTtlMs: 5000 });
  };
  return { a: make(0), b: make(1), reconnects };
}

/** A run on the computer: its first `machine()` checks the machine with the provider (`ensure` with `verify`). */
async function runOn(runtime: ComputerRuntime, botId = "alpha"): Promise<Machine> {
  const run = runtime.startRun({ workspaceId: "w", botId });
  await run.machine();
  await run.end("completed");
  return (await runtime.runningMachine("team-w")) as Machine;
}

describe("the machine object across liveness checks", () => {
  it("keeps the object while the provider answers the same machine in the same stretch", async () => {
    const { a, b, reconnects } = await workers();
    const first = await runOn(a);
    const asked = reconnects[0] ?? 0;
    expect(await runOn(a)).toBe(first);
    expect(await runOn(a)).toBe(first);
    expect(reconnects[0]).toBe(asked + 2);
    // Another worker using it without stopping it changes nothing.
    await runOn(b, "beta");
    expect(await runOn(a)).toBe(first);
    // A person's screen (desktopFor) gets the same object.
    await a.desktopFor({ computerId: "team-w", botId: "alpha" });
    expect(await a.runningMachine("team-w")).toBe(first);
  });

  it("takes a new object after this worker stopped the computer and it resumed", async () => {
    const { a } = await workers();
    const first = await runOn(a);
    await a.stopComputer("team-w");
    expect(await a.runningMachine("team-w")).toBeUndefined();
    const resumed = await runOn(a);
    expect(resumed).not.toBe(first);
    expect(resumed.ref).toBe(first.ref);
  });

  it("takes a new object when another worker stopped and resumed the same machine in between", async () => {
    const { a, b } = await workers();
    const first = await runOn(a);
    await b.stopComputer("team-w");
    await runOn(b);
    const record = await a.leases.getComputer("team-w");
    expect(record?.providerRef).toBe(first.ref);
    expect(record?.runs.map((r) => r.endReason)).toEqual(["stopped", undefined]);
    const after = await runOn(a);
    expect(after.ref).toBe(first.ref);
    expect(after).not.toBe(first);
    // And keeps that one from then on.
    expect(await runOn(a)).toBe(after);
  });

  it("takes a new object on the stopped machine that it resumes itself after another worker's stop", async () => {
    const { a, b } = await workers();
    const first = await runOn(a);
    await b.stopComputer("team-w");
    const after = await runOn(a);
    expect(after.ref).toBe(first.ref);
    expect(after).not.toBe(first);
  });

  it("uses the new machine after another worker replaced the computer", async () => {
    const { a, b } = await workers();
    const first = await runOn(a);
    const update = await b.operations.requestUpdate({ computerId: "team-w", owner: "operator" });
    expect((await b.operations.waitFor(update.id)).status).toBe("succeeded");
    const record = await a.leases.getComputer("team-w");
    expect(record?.providerRef).not.toBe(first.ref);
    const after = await runOn(a);
    expect(after.ref).toBe(record?.providerRef);
    expect(await runOn(a)).toBe(after);
  });
});
