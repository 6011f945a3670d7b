import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Machine, ProviderRef } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "./computer-runtime.js";

const text = (s: string) => new TextEncoder().encode(s);

async function setup(screenLimit: number, keepsScreensBetweenRuns?: boolean) {
  const dataDir = await mkdtemp(join(tmpdir(), "screens-between-runs-"));
  const provider = createFakeProvider(
    keepsScreensBetweenRuns === undefined ? {} : { capabilities: { keepsScreensBetweenRuns } },
  );
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    screenLimit,
    idleMs: 0,
    leaseTtlMs: 5000,
  });
  /** The computer's machine as the provider has it, outside any run. */
  const raw = async (computerId: string) => {
    const record = await runtime.leases.getComputer(computerId);
    return (await provider.reconnect(record?.providerRef as ProviderRef)) as Machine;
  };
  /** A run of `botId` that opens its screen and ends with `outcome`; returns the screen's display. */
  const screenRun = async (workspaceId: string, botId: string, outcome: "completed" | "failed") => {
    const run = runtime.startRun({ workspaceId, botId });
    const desktop = await run.desktop();
    const display = desktop.display;
    await run.end(outcome);
    return display;
  };
  return { runtime, raw, screenRun };
}

describe("screens between runs", () => {
  it("a successful run keeps its bot's screen for the next run; its control ends with the run", async () => {
    const { runtime, raw, screenRun } = await setup(1);
    const run = runtime.startRun({ workspaceId: "k1", botId: "alpha" });
    const desktop = await run.desktop();
    await run.end("completed");
    // The run's own handle is revoked with its lease.
    await expect(desktop.act([{ type: "move", x: 1, y: 1 }])).rejects.toMatchObject({ code: "LEASE_LOST" });
    // The screen itself is still up: at a limit of one, another bot's screen does not fit beside it.
    const machine = await raw("team-k1");
    await expect(machine.openDesktop?.("intruder")).rejects.toMatchObject({ code: "MULTI_SCREEN_UNAVAILABLE" });
    // The bot's next run gets the same screen.
    expect(await screenRun("k1", "alpha", "completed")).toBe(desktop.display);
  });

  it("a provider that releases screens at every run's end (CreateOS) tears a completed run's screen down", async () => {
    const { raw, screenRun } = await setup(1, false);
    await screenRun("k5", "alpha", "completed");
    // The slot is free: at a limit of one, another bot's screen fits.
    const other = await (await raw("team-k5")).openDesktop?.("other");
    expect(other?.botId).toBe("other");
    await other?.release();
  });

  it("a failed run tears its screen down", async () => {
    const { raw, screenRun } = await setup(1);
    await screenRun("k2", "alpha", "failed");
    const other = await (await raw("team-k2")).openDesktop?.("other");
    expect(other?.botId).toBe("other");
    await other?.release();
  });

  it("at the limit the oldest idle screen makes room, and that bot's profile is intact on its next run", async () => {
    const { runtime, raw, screenRun } = await setup(2);
    const first = runtime.startRun({ workspaceId: "k3", botId: "alpha" });
    const machine = await first.machine();
    await machine.files.write(".browser-profiles/alpha/Cookies", text("session=alpha"));
    await first.desktop();
    await first.end("completed"); // alpha's screen kept, idle first
    await screenRun("k3", "beta", "completed"); // beta's kept, idle second
    await screenRun("k3", "gamma", "completed"); // the limit is 2: alpha's screen goes
    const computer = await raw("team-k3");
    // beta's and gamma's screens are the two up now: a third bot does not fit.
    await expect(computer.openDesktop?.("intruder")).rejects.toMatchObject({ code: "MULTI_SCREEN_UNAVAILABLE" });
    // alpha's next run: beta's screen (now the oldest idle) makes room; the profile is as it was.
    const again = runtime.startRun({ workspaceId: "k3", botId: "alpha" });
    await again.desktop();
    const cookies = await (await again.machine()).files.read(".browser-profiles/alpha/Cookies");
    expect(new TextDecoder().decode(cookies)).toBe("session=alpha");
    await again.end("completed");
  });

  it("MULTI_SCREEN_UNAVAILABLE only when every screen is busy", async () => {
    const { runtime } = await setup(2);
    const a = runtime.startRun({ workspaceId: "k4", botId: "alpha" });
    const b = runtime.startRun({ workspaceId: "k4", botId: "beta" });
    await a.desktop();
    await b.desktop();
    const c = runtime.startRun({ workspaceId: "k4", botId: "gamma" });
    await expect(c.desktop()).rejects.toMatchObject({ code: "MULTI_SCREEN_UNAVAILABLE" });
    await c.end("failed");
    await a.end("completed"); // now alpha's screen is idle: gamma gets room
    const d = runtime.startRun({ workspaceId: "k4", botId: "gamma" });
    expect((await d.desktop()).botId).toBe("gamma");
    await Promise.all([b.end("completed"), d.end("completed")]);
  });
});
