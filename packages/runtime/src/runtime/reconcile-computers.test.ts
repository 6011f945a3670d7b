import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { COMPUTER_LABEL, createComputerRuntime, DEPLOYMENT_LABEL } from "./computer-runtime.js";

const MINUTE = 60_000;

async function setup() {
  const dataDir = await mkdtemp(join(tmpdir(), "reconcile-test-"));
  const provider = createFakeProvider();
  const time = { now: 1_800_000_000_000 };
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore({ clock: () => time.now }),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    clock: () => time.now,
    idleMs: 0,
    deployment: "recon-a",
  });
  const machineFor = (deployment: string, computerId: string) =>
    provider.provision({
      computerId,
      homeKey: computerId,
      labels: { [DEPLOYMENT_LABEL]: deployment, [COMPUTER_LABEL]: computerId },
    });
  const alive = async (ref: ProviderRef) => (await provider.list({ labels: {} })).includes(ref);
  return { runtime, provider, time, machineFor, alive };
}

describe("reconciler on the fake provider", () => {
  it("destroys this deployment's orphan machines after the grace period and leaves other deployments' alone", async () => {
    const { runtime, time, machineFor, alive } = await setup();
    const run = runtime.startRun({ workspaceId: "w1", botId: "alpha" });
    const owned = (await run.machine()).ref;
    await run.end("completed");
    const orphan = await machineFor("recon-a", "team-ghost");
    const foreign = await machineFor("recon-b", "team-other");

    const first = await runtime.reconcile({ orphanGraceMs: 5 * MINUTE });
    expect(first).toMatchObject({ destroyed: [], awaitingGrace: [orphan.ref], reconciled: [] });
    time.now += 6 * MINUTE;
    const second = await runtime.reconcile({ orphanGraceMs: 5 * MINUTE });
    expect(second.destroyed).toEqual([orphan.ref]);
    expect(await alive(orphan.ref)).toBe(false);
    expect(await alive(foreign.ref)).toBe(true);
    expect(await alive(owned)).toBe(true);
  });

  it("never destroys a machine of a reserved computer", async () => {
    const { runtime, machineFor, alive } = await setup();
    const run = runtime.startRun({ workspaceId: "w2", botId: "alpha" });
    await run.machine();
    await run.end("completed");
    // An update in flight: its new machine exists, the record does not name it yet.
    const reservation = await runtime.leases.reserve({ computerId: "team-w2", holder: "op", purpose: "update" });
    const inFlight = await machineFor("recon-a", "team-w2");
    expect((await runtime.reconcile({ orphanGraceMs: 0 })).destroyed).toEqual([]);
    expect(await alive(inFlight.ref)).toBe(true);
    await runtime.leases.release(reservation);
    expect((await runtime.reconcile({ orphanGraceMs: 0 })).destroyed).toEqual([inFlight.ref]);
  });

  it("closes the open stretch of a record whose machine vanished as reconciled; the next run replaces it", async () => {
    const { runtime, provider } = await setup();
    const run = runtime.startRun({ workspaceId: "w3", botId: "alpha" });
    const machine = await run.machine();
    await machine.files.write("bots/alpha/kept.txt", new TextEncoder().encode("kept"));
    await run.end("completed");
    await ((await provider.reconnect(machine.ref)) as Machine).destroy();

    expect((await runtime.reconcile()).reconciled).toEqual(["team-w3"]);
    const record = await runtime.leases.getComputer("team-w3");
    expect(record?.providerRef).toBeNull();
    expect(record?.runs.map((r) => r.endReason)).toEqual(["reconciled"]);
    expect((await runtime.reconcile()).reconciled).toEqual([]);

    const next = runtime.startRun({ workspaceId: "w3", botId: "alpha" });
    const replacement = await next.machine();
    expect(Buffer.from(await replacement.files.read("bots/alpha/kept.txt")).toString()).toBe("kept");
    await next.end("completed");
    expect((await runtime.leases.getComputer("team-w3"))?.runs.map((r) => r.endReason)).toEqual([
      "reconciled",
      undefined,
    ]);
  });

  it("opens the stretch of a machine found running with no recorded start, after the grace period, from when it was first seen", async () => {
    const { runtime, provider, time } = await setup();
    const run = runtime.startRun({ workspaceId: "w4", botId: "alpha" });
    const machine = await run.machine();
    await run.end("completed");
    await runtime.stopComputer("team-w4");
    const stopped = await runtime.runRecords.list();
    expect(stopped.records.map((r) => r.endReason)).toEqual(["stopped"]);
    // Started behind the runtime's back: a worker died between bringing the
    // machine up and recording its start.
    expect(await provider.reconnect(machine.ref)).not.toBe("gone");
    const noticedAt = time.now;

    expect((await runtime.reconcile({ unrecordedGraceMs: MINUTE })).recordedStarts).toEqual([]);
    time.now += 2 * MINUTE;
    expect((await runtime.reconcile({ unrecordedGraceMs: MINUTE })).recordedStarts).toEqual(["team-w4"]);
    const { records } = await runtime.runRecords.list();
    expect(records).toHaveLength(2);
    expect(records[1]).toMatchObject({ computerId: "team-w4", startedAt: noticedAt });
    expect(records[1]?.endedAt).toBeUndefined();
    const record = await runtime.leases.getComputer("team-w4");
    expect(record?.runs.at(-1)).toMatchObject({ runId: records[1]?.recordId, startedAt: noticedAt });
    expect(record?.runs.at(-1)?.endedAt).toBeUndefined();
    // Recorded now: later passes leave it, and the run hours count it to now.
    expect((await runtime.reconcile({ unrecordedGraceMs: 0 })).recordedStarts).toEqual([]);
    expect((await runtime.runRecords.list()).records).toHaveLength(2);
  });

  it("leaves a stopped machine and a recorded running one alone", async () => {
    const { runtime } = await setup();
    const run = runtime.startRun({ workspaceId: "w5", botId: "alpha" });
    await run.machine();
    await run.end("completed");
    expect((await runtime.reconcile({ unrecordedGraceMs: 0 })).recordedStarts).toEqual([]);
    await runtime.stopComputer("team-w5");
    expect((await runtime.reconcile({ unrecordedGraceMs: 0 })).recordedStarts).toEqual([]);
    expect((await runtime.runRecords.list()).records.map((r) => r.endReason)).toEqual(["stopped"]);
  });

  it("refuses bad options", async () => {
    const { runtime } = await setup();
    await expect(runtime.reconcile({ orphanGraceMs: -1 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/"orphanGraceMs"/),
    });
  });
});
