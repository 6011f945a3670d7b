import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider, withProvision } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { ComputerOperation } from "./computer-operation.js";
import { createComputerRuntime } from "./computer-runtime.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => Buffer.from(data).toString("utf8");
const MINUTE = 60_000;

/** Two workers (runtimes) on one state store and one fake provider whose provisioning can be held. */
async function setup() {
  const fake = createFakeProvider();
  const control = { hold: false, held: [] as (() => void)[] };
  const provider = withProvision(fake, (_spec, _ctx, next) => {
    if (!control.hold) return next();
    return new Promise<Machine>((resolve) => control.held.push(() => resolve(next())));
  });
  const time = { now: 1_800_000_000_000 };
  const stateStore = new MemoryStateStore({ clock: () => time.now });
  const homeStore = new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mode-change-test-")) });
  const make = () =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore,
      clock: () => time.now,
      idleMs: MINUTE,
      maxActiveMs: 0,
      leaseTtlMs: 5000,
      deployment: "mode-change-test",
      operations: { heartbeatMs: 1000 },
    });
  const runtime = make();
  const machineOf = async (computerId: string) => {
    const record = await runtime.leases.getComputer(computerId);
    return (await provider.reconnect(record?.providerRef as ProviderRef)) as Machine;
  };
  const names = async (machine: Machine, dir: string) => (await machine.files.list(dir)).map((e) => e.name);
  return { runtime, make, provider, control, time, machineOf, names };
}

const stageNames = (op: ComputerOperation) => op.stages.map((s) => `${s.name}:${s.status}`);

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a bot's mode change between the Team computer and a Private computer", () => {
  it("moves the bot's folder and browser profile to a Private computer's whole home, and back, saving both sides", async () => {
    const { runtime, provider, machineOf, names } = await setup();
    const team = runtime.startRun({ workspaceId: "mc1", botId: "alpha" });
    const machine = await team.machine();
    await machine.files.write("bots/alpha/notes.txt", bytes("mine"));
    await machine.files.write("bots/alpha/sub/deep.txt", bytes("deep"));
    await machine.files.write(".browser-profiles/alpha/Prefs", bytes("{}"));
    await machine.files.write("bots/beta/b.txt", bytes("beta's"));
    await machine.files.write(".browser-profiles/beta/Prefs", bytes("{}"));
    await machine.files.write("shared/s.txt", bytes("team's"));
    await team.end("completed");
    expect(await runtime.botMode({ workspaceId: "mc1", botId: "alpha" })).toBe("team");

    const toPrivate = await runtime.operations.waitFor(
      (await runtime.operations.requestModeChange({ workspaceId: "mc1", botId: "alpha", to: "private", owner: "o" }))
        .id,
    );
    expect(toPrivate).toMatchObject({
      status: "succeeded",
      kind: "mode-change",
      computerId: "team-mc1",
      modeChange: { botId: "alpha", to: "private", targetComputerId: "private-mc1-alpha" },
    });
    expect(stageNames(toPrivate)).toEqual([
      "checkpointing:done",
      "provisioning:done",
      "restoring:done",
      "switching:done",
      "copying:done",
      "checkpointing-target:done",
      "removing-source:done",
    ]);
    expect(await runtime.botMode({ workspaceId: "mc1", botId: "alpha" })).toBe("private");
    expect(await runtime.leases.getReservation("team-mc1")).toBeUndefined();
    expect(await runtime.leases.getReservation("private-mc1-alpha")).toBeUndefined();
    expect((await runtime.leases.getComputer("private-mc1-alpha"))?.scope).toEqual({ kind: "private", botId: "alpha" });

    // The bot's folder is the Private home, with nothing of the other bots or of the team.
    const own = runtime.startRun({ workspaceId: "mc1", botId: "alpha", private: true });
    const privateMachine = await own.machine();
    expect((await names(privateMachine, ".")).sort()).toEqual([".browser-profiles", "notes.txt", "sub"]);
    expect(await names(privateMachine, ".browser-profiles")).toEqual(["alpha"]);
    expect(text(await privateMachine.files.read(`${own.workdir}/sub/deep.txt`))).toBe("deep");
    await privateMachine.files.write("later.txt", bytes("written on the private computer"));
    await own.end("completed");
    // The Team computer keeps the other bots' work and loses alpha's.
    const teamMachine = await machineOf("team-mc1");
    expect(await names(teamMachine, "bots")).toEqual(["beta"]);
    expect(await names(teamMachine, ".browser-profiles")).toEqual(["beta"]);
    // Both sides are saved: machines restored from their last checkpoints show the move.
    for (const computerId of ["team-mc1", "private-mc1-alpha"]) {
      const op = await runtime.operations.requestRecovery({ computerId, owner: "o" });
      expect((await runtime.operations.waitFor(op.id)).status).toBe("succeeded");
    }
    expect(await names(await machineOf("team-mc1"), "bots")).toEqual(["beta"]);
    const restored = await machineOf("private-mc1-alpha");
    expect(text(await restored.files.read("notes.txt"))).toBe("mine");
    expect(text(await restored.files.read("later.txt"))).toBe("written on the private computer");
    const privateRef = restored.ref;

    const toTeam = await runtime.operations.waitFor(
      (await runtime.operations.requestModeChange({ workspaceId: "mc1", botId: "alpha", to: "team", owner: "o" })).id,
    );
    expect(toTeam).toMatchObject({ status: "succeeded", computerId: "private-mc1-alpha" });
    expect(stageNames(toTeam)).toEqual([
      "checkpointing:done",
      "copying:done",
      "checkpointing-target:done",
      "removing-source:done",
    ]);
    expect(await runtime.botMode({ workspaceId: "mc1", botId: "alpha" })).toBe("team");
    expect(await runtime.leases.getComputer("private-mc1-alpha")).toBeUndefined();
    expect(await provider.reconnect(privateRef)).toBe("gone");
    const back = runtime.startRun({ workspaceId: "mc1", botId: "alpha" });
    const backMachine = await back.machine();
    expect((await names(backMachine, back.workdir)).sort()).toEqual(["later.txt", "notes.txt", "sub"]);
    expect(text(await backMachine.files.read("bots/alpha/later.txt"))).toBe("written on the private computer");
    expect(text(await backMachine.files.read(".browser-profiles/alpha/Prefs"))).toBe("{}");
    expect(text(await backMachine.files.read("bots/beta/b.txt"))).toBe("beta's");
    await back.end("completed");
    const recovered = await runtime.operations.waitFor(
      (await runtime.operations.requestRecovery({ computerId: "team-mc1", owner: "o" })).id,
    );
    expect(recovered.status).toBe("succeeded");
    expect(text(await (await machineOf("team-mc1")).files.read("bots/alpha/notes.txt"))).toBe("mine");
  });

  it("waits for a running update, and while it runs keeps runs, takeovers, stop, suspension and operations off both computers, on every worker", async () => {
    const { runtime, make, control, time } = await setup();
    const team = runtime.startRun({ workspaceId: "mc2", botId: "alpha" });
    await (await team.machine()).files.write("bots/alpha/a.txt", bytes("a"));
    await team.end("completed");
    const change = { workspaceId: "mc2", botId: "alpha", to: "private", owner: "o" } as const;

    control.hold = true;
    const update = await runtime.operations.requestUpdate({ computerId: "team-mc2", owner: "o" });
    await until(
      async () =>
        (await runtime.operations.get(update.id))?.stages.at(-1)?.name === "provisioning" ? true : undefined,
      "the update's provisioning",
    );
    await expect(runtime.operations.requestModeChange(change)).rejects.toMatchObject({ code: "LEASE_HELD" });
    control.held.shift()?.();
    expect((await runtime.operations.waitFor(update.id)).status).toBe("succeeded");

    const op = await runtime.operations.requestModeChange(change);
    await until(
      async () => ((await runtime.operations.get(op.id))?.stages.at(-1)?.name === "provisioning" ? true : undefined),
      "the private computer's provisioning",
    );
    const other = make();
    time.now += 5 * MINUTE;
    for (const computerId of ["team-mc2", "private-mc2-alpha"]) {
      expect((await other.leases.getReservation(computerId))?.purpose).toBe("mode-change");
      await expect(other.operations.requestUpdate({ computerId, owner: "o" })).rejects.toMatchObject({
        code: "LEASE_HELD",
      });
    }
    await expect(other.operations.requestRecovery({ computerId: "team-mc2", owner: "o" })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    await expect(other.operations.requestModeChange({ ...change, botId: "beta" })).rejects.toMatchObject({
      code: "LEASE_HELD",
    });
    for (const own of [false, true]) {
      const run = other.startRun({ workspaceId: "mc2", botId: own ? "alpha" : "beta", private: own });
      await expect(run.machine()).rejects.toMatchObject({ code: "LEASE_HELD" });
      await run.end("failed");
    }
    await expect(
      other.takeover({ computerId: "team-mc2", botId: "beta", holder: "p", ttlMs: 5000 }),
    ).rejects.toMatchObject({ code: "LEASE_HELD" });
    await expect(other.stopComputer("team-mc2")).rejects.toMatchObject({ code: "LEASE_HELD" });
    // Idle for five minutes (the idle time is one): suspension still leaves it alone.
    expect(await other.suspendIdle()).toEqual([]);

    control.hold = false;
    control.held.shift()?.();
    expect((await runtime.operations.waitFor(op.id)).status).toBe("succeeded");
    expect(await other.leases.getReservation("team-mc2")).toBeUndefined();
    expect(await other.leases.getReservation("private-mc2-alpha")).toBeUndefined();
    // Free again: the idle Team computer suspends.
    time.now += 5 * MINUTE;
    expect(await other.suspendIdle()).toContain("team-mc2");
  });

  it("an interrupted mode change keeps both computers reserved until its call settles; then the bot is where it was, and both are free", async () => {
    const { runtime, make, control, time, machineOf } = await setup();
    const team = runtime.startRun({ workspaceId: "mc4", botId: "alpha" });
    await (await team.machine()).files.write("bots/alpha/a.txt", bytes("a"));
    await team.end("completed");
    control.hold = true;
    const op = await runtime.operations.requestModeChange({
      workspaceId: "mc4",
      botId: "alpha",
      to: "private",
      owner: "o",
    });
    await until(
      async () => ((await runtime.operations.get(op.id))?.stages.at(-1)?.name === "provisioning" ? true : undefined),
      "the private computer's provisioning",
    );
    time.now += 11 * MINUTE;
    const other = make();
    expect((await other.reconcile()).interrupted).toEqual([op.id]);
    for (const computerId of ["team-mc4", "private-mc4-alpha"])
      expect((await other.leases.getReservation(computerId))?.status).toBe("interrupted");
    expect(await other.operations.canRecover("team-mc4")).toBe(false);

    control.hold = false;
    control.held.shift()?.();
    const settled = await until(async () => {
      const current = await other.operations.get(op.id);
      return current?.settled ? current : undefined;
    }, "the settled mark");
    expect(stageNames(settled)).toEqual(["checkpointing:done", "provisioning:failed"]);
    for (const computerId of ["team-mc4", "private-mc4-alpha"])
      await until(async () => ((await other.leases.getReservation(computerId)) ? undefined : true), "the release");
    // The Private computer made for the move is gone again; the bot's files never left the Team computer.
    expect(await other.botMode({ workspaceId: "mc4", botId: "alpha" })).toBe("team");
    expect(text(await (await machineOf("team-mc4")).files.read("bots/alpha/a.txt"))).toBe("a");
    expect(await other.operations.canRecover("team-mc4")).toBe(true);
    const again = await other.operations.waitFor(
      (await other.operations.requestModeChange({ workspaceId: "mc4", botId: "alpha", to: "private", owner: "o" })).id,
    );
    expect(again.status).toBe("succeeded");
  });

  it("moves a stopped Private computer's bot to a Team computer its workspace never had", async () => {
    const { runtime, machineOf } = await setup();
    const own = runtime.startRun({ workspaceId: "mc5", botId: "solo", private: true });
    await (await own.machine()).files.write("plan.md", bytes("the plan"));
    await own.end("completed");
    await runtime.stopComputer("private-mc5-solo");
    expect(await runtime.leases.getComputer("team-mc5")).toBeUndefined();

    const moved = await runtime.operations.waitFor(
      (await runtime.operations.requestModeChange({ workspaceId: "mc5", botId: "solo", to: "team", owner: "o" })).id,
    );
    expect(moved.status).toBe("succeeded");
    expect(stageNames(moved).slice(-3)).toEqual(["copying:done", "checkpointing-target:done", "removing-source:done"]);
    expect((await runtime.leases.getComputer("team-mc5"))?.scope).toEqual({ kind: "team" });
    expect((await runtime.leases.getComputer("team-mc5"))?.owner).toMatchObject({ spaceId: "mc5" });
    expect(text(await (await machineOf("team-mc5")).files.read("bots/solo/plan.md"))).toBe("the plan");
    expect(await runtime.botMode({ workspaceId: "mc5", botId: "solo" })).toBe("team");
  });

  it("refuses what it cannot move, and a failed move leaves the bot where it was", async () => {
    const { runtime, machineOf } = await setup();
    const request = (to: "team" | "private", botId = "alpha") =>
      runtime.operations.requestModeChange({ workspaceId: "mc3", botId, to, owner: "o" });
    await expect(request("private")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(request("team")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(request("sideways" as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });

    const team = runtime.startRun({ workspaceId: "mc3", botId: "alpha" });
    await (await team.machine()).files.write("bots/alpha/team.txt", bytes("on the team computer"));
    await expect(request("private")).rejects.toMatchObject({ code: "BOT_BUSY" });
    await team.end("completed");
    const own = runtime.startRun({ workspaceId: "mc3", botId: "alpha", private: true });
    await (await own.machine()).files.write("own.txt", bytes("on the private computer"));
    await own.end("completed");
    await expect(request("private")).rejects.toMatchObject({ code: "CONFLICT" });

    // Back to a Team computer that already has the bot's folder: nothing moves, nothing is lost.
    const failed = await runtime.operations.waitFor((await request("team")).id);
    expect(failed.status).toBe("failed");
    expect(failed.error?.code).toBe("CONFLICT");
    expect(stageNames(failed)).toEqual(["checkpointing:done", "copying:failed"]);
    expect(failed.warnings.join(" ")).toMatch(/stays on "private-mc3-alpha" with its files/);
    expect(text(await (await machineOf("team-mc3")).files.read("bots/alpha/team.txt"))).toBe("on the team computer");
    expect(text(await (await machineOf("private-mc3-alpha")).files.read("own.txt"))).toBe("on the private computer");
    expect(await runtime.botMode({ workspaceId: "mc3", botId: "alpha" })).toBe("private");
    expect(await runtime.leases.getReservation("team-mc3")).toBeUndefined();
  });
});
