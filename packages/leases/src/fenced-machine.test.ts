import type { DesktopSession, Machine, OpContext } from "@agent-computer/core";
import { manualEngine } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { fenced } from "./fenced-machine.js";

/** A machine that records which calls reached it and with what lease. */
function recordingMachine() {
  const calls: { name: string; lease?: OpContext["lease"] }[] = [];
  const note = <T>(name: string, ctx: OpContext | undefined, result: T): T => {
    calls.push({ name, lease: ctx?.lease });
    return result;
  };
  const desktop: DesktopSession = {
    botId: "bot-a",
    display: ":100",
    observe: async (ctx) => note("observe", ctx, {} as never),
    act: async (_actions, ctx) => note("act", ctx, { results: [] } as never),
    screenEndpoint: async (_mode, ctx) => note("screenEndpoint", ctx, {} as never),
    release: async (ctx) => note("release", ctx, undefined),
  };
  const machine: Machine = {
    ref: "fake:1",
    workspacePath: "/home",
    exec: async (_req, ctx) => note("exec", ctx, { exitCode: 0 } as never),
    files: {
      list: async (_p, ctx) => note("list", ctx, []),
      read: async (_p, ctx) => note("read", ctx, new Uint8Array()),
      write: async (_p, _d, ctx) => note("write", ctx, undefined),
      exportWorkspace: async (ctx) => note("exportWorkspace", ctx, {} as never),
      importWorkspace: async (_t, ctx) => note("importWorkspace", ctx, undefined),
    },
    openDesktop: async (_bot, ctx) => note("openDesktop", ctx, desktop),
    stop: async (ctx) => note("stop", ctx, undefined),
    destroy: async (ctx) => note("destroy", ctx, undefined),
  };
  return { machine, calls };
}

describe("fenced(machine, lease)", () => {
  it("follows renewals: a machine and desktop fenced with the first lease of a grant keep working for 20 TTLs", async () => {
    const { engine, advance } = manualEngine();
    const { machine, calls } = recordingMachine();
    const first = await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w1", ttlMs: 100 });
    const m = fenced(machine, first);
    const desktop = await m.openDesktop!("bot-a");
    let current = first;
    for (let step = 0; step < 60; step++) {
      advance(34); // a renewal every third of a TTL, as a run's heartbeat does
      current = await engine.renew(current);
      await m.exec({ argv: ["true"] });
      await desktop.act([{ type: "wait", ms: 0 }] as never);
    }
    expect(current).not.toBe(first);
    expect(calls.filter((c) => c.name === "act")).toHaveLength(60);
  });

  it("fails every handle of a grant with the same LEASE_LOST once it expires unrenewed, and a renewal cannot revive it", async () => {
    const { engine, advance } = manualEngine();
    const { machine } = recordingMachine();
    const first = await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w1", ttlMs: 100 });
    const renewed = await engine.renew(first);
    const viaFirst = fenced(machine, first);
    const viaRenewed = fenced(machine, renewed);
    const desktop = await viaFirst.openDesktop!("bot-a");
    advance(101);
    const codes = await Promise.all(
      [() => viaFirst.exec({ argv: ["true"] }), () => viaRenewed.exec({ argv: ["true"] }), () => desktop.act([])].map(
        (call) =>
          call().then(
            () => "ok",
            (error: { code?: string }) => error.code,
          ),
      ),
    );
    expect(codes).toEqual(["LEASE_LOST", "LEASE_LOST", "LEASE_LOST"]);
    await expect(engine.renew(first)).rejects.toMatchObject({ code: "LEASE_LOST" });
    await engine.release(renewed);
    await expect(engine.renew(renewed)).rejects.toMatchObject({ code: "LEASE_LOST" });
  });

  it("passes calls through with the lease while it is current, and refuses mutations once fenced out", async () => {
    const { engine, time } = manualEngine();
    const { machine, calls } = recordingMachine();
    const lease = await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w1", ttlMs: 100 });
    const m = fenced(machine, lease);
    expect(m.ref).toBe("fake:1");
    await m.exec({ argv: ["true"] });
    await m.files.write("a.txt", new Uint8Array([1]));
    expect(calls.map((c) => c.name)).toEqual(["exec", "write"]);
    expect(calls[0]?.lease).toEqual({ key: lease.key, token: lease.token });

    time.store += 100;
    await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w2", ttlMs: 100 });
    for (const call of [
      () => m.exec({ argv: ["true"] }),
      () => m.files.write("a.txt", new Uint8Array([1])),
      () => m.files.importWorkspace({} as never),
      () => m.openDesktop?.("bot-a"),
      () => m.stop(),
      () => m.destroy(),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: "FENCED_OUT" });
    }
    // Reads change nothing a newer holder relies on: they pass.
    await m.files.list("");
    await m.files.read("a.txt");
    expect(calls.map((c) => c.name)).toEqual(["exec", "write", "list", "read"]);
  });

  it("fails the bot's desktop actions with FENCED_OUT while a person controls its screen", async () => {
    const { engine } = manualEngine();
    const { machine, calls } = recordingMachine();
    const lease = await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w1", ttlMs: 10_000 });
    const desktop = await engine.fenced(machine, lease).openDesktop?.("bot-a");
    if (!desktop) throw new Error("expected a desktop");
    await desktop.act([]);
    const control = await engine.takeover({
      computerId: "c",
      botId: "bot-a",
      holder: "person",
      ttlMs: 10_000,
      run: "waiting_takeover",
    });
    await expect(desktop.act([])).rejects.toMatchObject({ code: "FENCED_OUT" });
    await desktop.observe(); // watching is fine
    await engine.release(control);
    await desktop.act([]);
    expect(calls.filter((c) => c.name === "act")).toHaveLength(2);
  });

  it("refuses to open another bot's desktop with a bot's execution lease", async () => {
    const { engine } = manualEngine();
    const { machine } = recordingMachine();
    const lease = await engine.acquireExecution({ computerId: "c", botId: "bot-a", holder: "w1", ttlMs: 10_000 });
    await expect(fenced(machine, lease).openDesktop?.("bot-b")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
