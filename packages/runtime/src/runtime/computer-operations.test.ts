import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { AgentComputerError, COMPUTER_LABELS } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider, withProvision } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { ComputerOperation } from "./computer-operation.js";
import { createComputerRuntime } from "./computer-runtime.js";
import { InProcessOperationQueue } from "./in-process-operation-queue.js";
import type { OperationQueue } from "./operation-queue.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => Buffer.from(data).toString("utf8");
const MINUTE = 60_000;

/** A fake provider whose provisioning can be made to fail or to hang, as a bad image or a stuck call would. */
function controllableProvider() {
  const fake = createFakeProvider();
  const control = {
    mode: "ok" as "ok" | "fail" | "hang",
    /** Provisioning calls left hanging: each can still answer (with a machine) or fail. */
    hung: [] as { answer(): void; fail(error: Error): void }[],
  };
  const provider = withProvision(fake, (_spec, _ctx, next) => {
    if (control.mode === "fail")
      return Promise.reject(new AgentComputerError("NOT_FOUND", "The image bad:image is not on the engine."));
    if (control.mode === "hang")
      return new Promise<Machine>((resolve, reject) =>
        control.hung.push({ answer: () => resolve(next()), fail: reject }),
      );
    return next();
  });
  return { provider, control };
}

async function setup(options: { queue?: OperationQueue } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "operations-test-"));
  const { provider, control } = controllableProvider();
  const time = { now: 1_800_000_000_000 };
  const stateStore = new MemoryStateStore({ clock: () => time.now });
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const make = (extra: { queue?: OperationQueue } = {}) =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore,
      clock: () => time.now,
      idleMs: 60_000,
      maxActiveMs: 0,
      leaseTtlMs: 5000,
      deployment: "ops-test",
      operations: { heartbeatMs: 1000, ...(extra.queue ? { queue: extra.queue } : {}) },
    });
  const runtime = make(options);
  /** A computer with `saved.txt` checkpointed at a run's end and `unsaved.txt` written after it. */
  const computerWithWork = async (workspaceId: string) => {
    const run = runtime.startRun({ workspaceId, botId: "alpha" });
    const machine = await run.machine();
    await machine.files.write("bots/alpha/saved.txt", bytes("saved at a boundary"));
    await run.end("completed");
    const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
    const record = await runtime.leases.getComputer(computerId);
    const live = (await provider.reconnect(record?.providerRef as ProviderRef)) as Machine;
    await live.files.write("bots/alpha/unsaved.txt", bytes("live work"));
    return { computerId, record: record as NonNullable<typeof record> };
  };
  const machineOf = async (computerId: string) => {
    const record = await runtime.leases.getComputer(computerId);
    return provider.reconnect(record?.providerRef as ProviderRef);
  };
  return { runtime, make, provider, control, time, computerWithWork, machineOf, stateStore };
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const stageNames = (op: ComputerOperation) => op.stages.map((s) => `${s.name}:${s.status}`);

describe("computer operations on the fake provider", () => {
  it("updates: saves live work, replaces the machine, switches the record and removes the old one", async () => {
    const { runtime, computerWithWork, machineOf, provider } = await setup();
    const { computerId, record } = await computerWithWork("up1");
    expect(await runtime.operations.canUpdate(computerId)).toBe(true);
    const queued = await runtime.operations.requestUpdate({ computerId, owner: "owner-1" });
    expect(queued).toMatchObject({ status: "queued", kind: "update", owner: "owner-1" });
    const done = await runtime.operations.waitFor(queued.id);
    expect(done.status).toBe("succeeded");
    expect(stageNames(done)).toEqual([
      "checkpointing:done",
      "provisioning:done",
      "restoring:done",
      "switching:done",
      "removing-old:done",
    ]);
    expect(done.stages[0]?.detail?.revision).toBe(2);
    const after = await runtime.leases.getComputer(computerId);
    expect(after?.providerRef).not.toBe(record.providerRef);
    expect(after?.runs.map((r) => r.endReason)).toEqual(["replaced", undefined]);
    expect(await provider.reconnect(record.providerRef as ProviderRef)).toBe("gone");
    const machine = (await machineOf(computerId)) as Machine;
    expect(text(await machine.files.read("bots/alpha/unsaved.txt"))).toBe("live work");
    expect(text(await machine.files.read("bots/alpha/saved.txt"))).toBe("saved at a boundary");
    // Bots use the new machine afterwards.
    const run = runtime.startRun({ workspaceId: "up1", botId: "alpha" });
    expect((await run.machine()).ref).toBe(after?.providerRef);
    await run.end("completed");
  });

  it("recovers from the last saved workspace without the old machine's unsaved work, and warns about it", async () => {
    const { runtime, computerWithWork, machineOf } = await setup();
    const { computerId, record } = await computerWithWork("rec1");
    const op = await runtime.operations.requestRecovery({ computerId, owner: "owner-1" });
    expect(op.warnings.join(" ")).toMatch(/may be lost/);
    const done = await runtime.operations.waitFor(op.id);
    expect(done.status).toBe("succeeded");
    expect(stageNames(done)).toEqual(["provisioning:done", "restoring:done", "switching:done", "removing-old:done"]);
    const machine = (await machineOf(computerId)) as Machine;
    expect(machine.ref).not.toBe(record.providerRef);
    expect(text(await machine.files.read("bots/alpha/saved.txt"))).toBe("saved at a boundary");
    await expect(machine.files.read("bots/alpha/unsaved.txt")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("a failed update keeps the old machine and the saved workspace; recovery then succeeds", async () => {
    const { runtime, computerWithWork, control, machineOf } = await setup();
    const { computerId, record } = await computerWithWork("fail1");
    control.mode = "fail";
    const failed = await runtime.operations.waitFor(
      (await runtime.operations.requestUpdate({ computerId, owner: "o" })).id,
    );
    expect(failed.status).toBe("failed");
    expect(failed.error?.code).toBe("NOT_FOUND");
    expect(stageNames(failed)).toEqual(["checkpointing:done", "provisioning:failed"]);
    expect(failed.warnings.join(" ")).toMatch(/keeps its previous machine.*revision 2 stays restorable.*may be lost/);
    const after = await runtime.leases.getComputer(computerId);
    expect(after?.providerRef).toBe(record.providerRef);
    expect(after?.revision).toBe(2);
    const old = (await machineOf(computerId)) as Machine;
    expect(text(await old.files.read("bots/alpha/unsaved.txt"))).toBe("live work");
    // Nothing holds the computer any more: recovery is available.
    expect(await runtime.leases.getReservation(computerId)).toBeUndefined();
    control.mode = "ok";
    const recovered = await runtime.operations.waitFor(
      (await runtime.operations.requestRecovery({ computerId, owner: "o" })).id,
    );
    expect(recovered.status).toBe("succeeded");
    const machine = (await machineOf(computerId)) as Machine;
    // The update's checkpoint saved the live work, so recovery brings it back.
    expect(text(await machine.files.read("bots/alpha/unsaved.txt"))).toBe("live work");
  });

  it("a worker that stops heartbeating leaves the operation interrupted and the computer reserved until its owner releases it", async () => {
    const { runtime, make, computerWithWork, control, time, machineOf } = await setup();
    const { computerId } = await computerWithWork("int1");
    control.mode = "hang";
    const op = await runtime.operations.requestUpdate({ computerId, owner: "owner-1" });
    await until(
      async () => ((await runtime.operations.get(op.id))?.stages.at(-1)?.name === "provisioning" ? true : undefined),
      "the provisioning stage",
    );
    // Another process, ten minutes and more later (the stuck worker sent no heartbeat meanwhile).
    time.now += 11 * MINUTE;
    control.mode = "ok";
    const other = make();
    expect((await other.operations.get(op.id))?.status).toBe("interrupted");
    expect(await runtime.suspendIdle()).toEqual([]);
    const run = other.startRun({ workspaceId: "int1", botId: "alpha" });
    await expect(run.machine()).rejects.toMatchObject({ code: "LEASE_HELD" });
    await run.end("failed");
    await expect(other.takeover({ computerId, botId: "alpha", holder: "p", ttlMs: 5000 })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    await expect(other.stopComputer(computerId)).rejects.toMatchObject({ code: "LEASE_HELD" });
    await expect(other.operations.requestRecovery({ computerId, owner: "owner-1" })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    await expect(other.deleteComputer(computerId)).rejects.toMatchObject({ code: "LEASE_HELD" });
    await expect(other.operations.releaseInterrupted({ id: op.id, owner: "owner-1" } as never)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/workersStopped/),
    });
    await expect(
      other.operations.releaseInterrupted({ id: op.id, owner: "someone-else", workersStopped: true }),
    ).rejects.toMatchObject({ code: "LEASE_HELD" });
    expect((await other.reconcile()).interrupted).toEqual([op.id]);

    const released = await other.operations.releaseInterrupted({ id: op.id, owner: "owner-1", workersStopped: true });
    expect(released).toMatchObject({ status: "interrupted", released: { by: "owner-1" } });
    const recovery = await other.operations.waitFor(
      (await other.operations.requestRecovery({ computerId, owner: "owner-1" })).id,
    );
    expect(recovery.status).toBe("succeeded");
    expect(text(await ((await machineOf(computerId)) as Machine).files.read("bots/alpha/unsaved.txt"))).toBe(
      "live work",
    );
    // The stuck call finally returns: the old worker must not overwrite what happened since.
    for (const call of control.hung) call.fail(new Error("the engine finally answered"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await other.operations.get(op.id)).toMatchObject({ status: "interrupted", released: { by: "owner-1" } });
    expect((await other.operations.get(op.id))?.settled).toBeUndefined();
    expect((await other.leases.getComputer(computerId))?.providerRef).toBe(
      ((await machineOf(computerId)) as Machine).ref,
    );
  });

  it("an interrupted operation stays reserved while its provider call hangs; once the call returns, recovery is available without a release", async () => {
    const { runtime, make, computerWithWork, control, time, machineOf, provider } = await setup();
    const { computerId, record } = await computerWithWork("settle1");
    control.mode = "hang";
    const op = await runtime.operations.requestUpdate({ computerId, owner: "owner-1" });
    await until(
      async () => ((await runtime.operations.get(op.id))?.stages.at(-1)?.name === "provisioning" ? true : undefined),
      "the provisioning stage",
    );
    time.now += 11 * MINUTE;
    control.mode = "ok";
    const other = make();
    expect((await other.reconcile()).interrupted).toEqual([op.id]);
    // A stale heartbeat alone frees nothing, however long it has been stale.
    time.now += 60 * MINUTE;
    await other.reconcile();
    expect(await other.operations.canRecover(computerId)).toBe(false);
    expect((await other.leases.getReservation(computerId))?.status).toBe("interrupted");
    await expect(other.operations.requestRecovery({ computerId, owner: "owner-1" })).rejects.toMatchObject({
      code: "LEASE_HELD",
      message: expect.stringMatching(/until its provider calls settle/),
    });
    expect((await other.operations.get(op.id))?.settled).toBeUndefined();

    // The stuck call finally answers, with a machine: the worker starts nothing more, removes that machine and frees the computer.
    expect(control.hung).toHaveLength(1);
    control.hung[0]?.answer();
    const settled = await until(async () => {
      const current = await other.operations.get(op.id);
      return current?.settled ? current : undefined;
    }, "the settled mark");
    expect(settled).toMatchObject({ status: "interrupted", worker: runtime.operations.workerId });
    expect(settled.released).toBeUndefined();
    expect(stageNames(settled)).toEqual(["checkpointing:done", "provisioning:failed"]);
    expect(settled.warnings.join(" ")).toMatch(/provider calls settled after it was interrupted/);
    await until(async () => ((await other.leases.getReservation(computerId)) ? undefined : true), "the release");
    expect(await other.operations.canRecover(computerId)).toBe(true);
    expect((await other.operations.list({ computerId })).map((o) => o.id)).toEqual([op.id]);
    // The record still names the old machine, and the late one is gone.
    expect((await other.leases.getComputer(computerId))?.providerRef).toBe(record.providerRef);
    const machines = await provider.list({ labels: { [COMPUTER_LABELS.computerId]: computerId } });
    expect(machines).toEqual([record.providerRef]);
    // Nothing to release any more: the owner's release says so without touching anything.
    expect(
      await other.operations.releaseInterrupted({ id: op.id, owner: "owner-1", workersStopped: true }),
    ).toMatchObject({ settled: { at: settled.settled?.at } });

    const recovery = await other.operations.waitFor(
      (await other.operations.requestRecovery({ computerId, owner: "owner-1" })).id,
    );
    expect(recovery.status).toBe("succeeded");
    // The update had saved the live work before its call hung.
    expect(text(await ((await machineOf(computerId)) as Machine).files.read("bots/alpha/unsaved.txt"))).toBe(
      "live work",
    );
  });

  it("refuses releasing an operation that still heartbeats or already finished", async () => {
    const { runtime, computerWithWork } = await setup();
    const { computerId } = await computerWithWork("rel1");
    const done = await runtime.operations.waitFor(
      (await runtime.operations.requestRecovery({ computerId, owner: "o" })).id,
    );
    await expect(
      runtime.operations.releaseInterrupted({ id: done.id, owner: "o", workersStopped: true }),
    ).rejects.toMatchObject({ code: "CONFLICT" });
    await expect(
      runtime.operations.releaseInterrupted({ id: "op-none", owner: "o", workersStopped: true }),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("republishes a queued operation whose enqueue was missed, and never replays a claimed one", async () => {
    let dropped = 0;
    const inner = new InProcessOperationQueue();
    const lossy: OperationQueue = {
      publish: async (id) => {
        if (dropped++ === 0) throw new Error("the queue was unreachable");
        await inner.publish(id);
      },
      subscribe: (worker) => inner.subscribe(worker),
    };
    const { runtime, computerWithWork } = await setup({ queue: lossy });
    const { computerId } = await computerWithWork("rep1");
    const op = await runtime.operations.requestRecovery({ computerId, owner: "o" });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await runtime.operations.get(op.id))?.status).toBe("queued");
    expect((await runtime.reconcile({ republishAfterMs: 0 })).republished).toEqual([op.id]);
    const done = await runtime.operations.waitFor(op.id);
    expect(done.status).toBe("succeeded");
    const ref = (await runtime.leases.getComputer(computerId))?.providerRef;
    // A duplicate delivery of a claimed (here finished) operation does nothing.
    await runtime.operations.work(op.id);
    expect(await runtime.operations.get(op.id)).toEqual(done);
    expect((await runtime.leases.getComputer(computerId))?.providerRef).toBe(ref);
    expect((await runtime.operations.list({ computerId })).map((o) => o.id)).toEqual([op.id]);
  });

  it("refuses operations on unknown computers, while bots run, and bad input", async () => {
    const { runtime, computerWithWork } = await setup();
    await expect(runtime.operations.requestUpdate({ computerId: "team-none", owner: "o" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    expect(await runtime.operations.canUpdate("team-none")).toBe(false);
    const { computerId } = await computerWithWork("busy1");
    const run = runtime.startRun({ workspaceId: "busy1", botId: "beta" });
    await run.machine();
    await expect(runtime.operations.requestUpdate({ computerId, owner: "o" })).rejects.toMatchObject({
      code: "BOT_BUSY",
    });
    await run.end("completed");
    await expect(runtime.operations.requestUpdate({ computerId, owner: "" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/"owner"/),
    });
  });

  it("deletes a bot's folder and browser profile, keeping other bots' work, and its private computer", async () => {
    const { runtime, provider, machineOf } = await setup();
    const a = runtime.startRun({ workspaceId: "del1", botId: "alpha" });
    const b = runtime.startRun({ workspaceId: "del1", botId: "beta" });
    const machine = await a.machine();
    await b.machine();
    await machine.files.write("bots/alpha/a.txt", bytes("a"));
    await machine.files.write(".browser-profiles/alpha/Prefs", bytes("{}"));
    await machine.files.write("bots/beta/b.txt", bytes("b"));
    const own = runtime.startRun({ workspaceId: "del1", botId: "alpha", private: true });
    const privateRef = (await own.machine()).ref;
    await expect(runtime.deleteBot({ workspaceId: "del1", botId: "alpha" })).rejects.toMatchObject({
      code: "BOT_BUSY",
    });
    await Promise.all([a.end("completed"), b.end("completed"), own.end("completed")]);
    expect(await runtime.deleteBot({ workspaceId: "del1", botId: "alpha" })).toEqual({ privateComputerDeleted: true });
    const team = (await machineOf("team-del1")) as Machine;
    expect((await team.files.list("bots")).map((e) => e.name)).toEqual(["beta"]);
    expect((await team.files.list(".browser-profiles")).map((e) => e.name)).toEqual([]);
    expect(await runtime.leases.getComputer("private-del1-alpha")).toBeUndefined();
    expect(await provider.reconnect(privateRef)).toBe("gone");
    await expect(runtime.deleteBot({ workspaceId: "del1", botId: "../x" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("deletes a computer: machine, record and home", async () => {
    const { runtime, provider, computerWithWork } = await setup();
    const { computerId, record } = await computerWithWork("del2");
    expect(await runtime.deleteComputer(computerId)).toBe(true);
    expect(await runtime.leases.getComputer(computerId)).toBeUndefined();
    expect(await provider.reconnect(record.providerRef as ProviderRef)).toBe("gone");
    expect(await runtime.deleteComputer(computerId)).toBe(false);
    // A new computer under the same id starts from an empty home.
    const run = runtime.startRun({ workspaceId: "del2", botId: "alpha" });
    await expect((await run.machine()).files.read("bots/alpha/saved.txt")).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await run.end("completed");
  });
});
