import { describe, expect, it } from "vitest";
import { IdleEndingRun } from "../src/idle-ending-run.js";
import { fakeComputer } from "./fake-computer.js";

const bot = { workspaceId: "mcp", botId: "alpha" };

describe("IdleEndingRun", () => {
  it("ends the run of a client quiet for the idle time, so its lease no longer holds the computer up; the next call starts another", async () => {
    const { runtime, run: unused } = await fakeComputer();
    await unused.end("completed");
    let now = 1_000_000;
    const serverRun = new IdleEndingRun(runtime, bot, () => now);
    const executing = async () => (await runtime.leases.botHolds("team-mcp", ["alpha"])).executing;

    // Nothing used yet: nothing to end.
    now += 60_000;
    expect(await serverRun.endIfIdle(10_000)).toBe(false);

    await serverRun.around(async () => (await serverRun.run.machine()).exec({ argv: ["true"] }));
    const firstRunId = serverRun.run.runId;
    expect(await executing()).toEqual(["alpha"]);
    now += 9_999;
    expect(await serverRun.endIfIdle(10_000)).toBe(false);
    now += 1;
    expect(await serverRun.endIfIdle(10_000)).toBe(true);
    expect(await executing()).toEqual([]);

    // A call in flight, however long, keeps the run.
    let finish = () => {};
    const inFlight = serverRun.around(
      () =>
        new Promise<void>((resolve) => {
          finish = resolve;
          void serverRun.run.machine();
        }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(serverRun.run.runId).not.toBe(firstRunId);
    now += 3_600_000;
    expect(await serverRun.endIfIdle(10_000)).toBe(false);
    finish();
    await inFlight;
    expect(await executing()).toEqual(["alpha"]);

    // For good: the stand-in then refuses, and no new run starts.
    await serverRun.end();
    expect(await executing()).toEqual([]);
    await expect(serverRun.run.machine()).rejects.toMatchObject({ code: "CONFLICT" });
  });
});
