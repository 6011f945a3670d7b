import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createComputerRuntime } from "./computer-runtime.js";
import { runtimeSettingsFromEnv } from "./runtime-settings.js";

// The operator's settings from the environment (the product documents):
// SANDBOX_TEAM_SCREEN_LIMIT (0: no cap), SANDBOX_IDLE_MS (15 min),
// COMPUTER_MAX_ACTIVE_MS (2 h; 0: off). A bad value names its variable.
describe("runtime settings from the environment", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("defaults to no screen cap, 15 minutes idle and a 2 hour active cap", () => {
    expect(runtimeSettingsFromEnv({})).toEqual({ screenLimit: 0, idleMs: 900_000, maxActiveMs: 7_200_000 });
    // An empty variable is unset.
    expect(runtimeSettingsFromEnv({ SANDBOX_IDLE_MS: "" }).idleMs).toBe(900_000);
  });

  it("reads each variable, 0 included", () => {
    expect(
      runtimeSettingsFromEnv({ SANDBOX_TEAM_SCREEN_LIMIT: "3", SANDBOX_IDLE_MS: "0", COMPUTER_MAX_ACTIVE_MS: "60000" }),
    ).toEqual({ screenLimit: 3, idleMs: 0, maxActiveMs: 60_000 });
  });

  it.each([
    ["SANDBOX_TEAM_SCREEN_LIMIT", "-1"],
    ["SANDBOX_IDLE_MS", "15m"],
    ["SANDBOX_IDLE_MS", "1.5"],
    ["COMPUTER_MAX_ACTIVE_MS", "9007199254740993"],
    ["COMPUTER_MAX_ACTIVE_MS", "abc"],
  ])("refuses %s=%s as INVALID_ARGUMENT naming the variable", (name, value) => {
    expect(() => runtimeSettingsFromEnv({ [name]: value })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining(name) }),
    );
  });

  it("is what a runtime made without options uses, and its options win over the environment", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "settings-"));
    vi.stubEnv("SANDBOX_IDLE_MS", "60000");
    let now = 1_000_000;
    const fromEnv = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir }),
      clock: () => now,
    });
    const run = fromEnv.startRun({ workspaceId: "env", botId: "alpha" });
    await run.machine();
    await run.end("completed");
    now += 61_000;
    expect(await fromEnv.suspendIdle()).toEqual(["team-env"]);

    vi.stubEnv("SANDBOX_IDLE_MS", "bad");
    expect(() =>
      createComputerRuntime({
        provider: createFakeProvider(),
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
      }),
    ).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("SANDBOX_IDLE_MS") }),
    );
    // An option wins: with idleMs 0 the same environment never suspends.
    vi.stubEnv("SANDBOX_IDLE_MS", "60000");
    const optioned = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir }),
      clock: () => now,
      idleMs: 0,
    });
    const other = optioned.startRun({ workspaceId: "opt", botId: "alpha" });
    await other.machine();
    await other.end("completed");
    now += 3_600_000;
    expect(await optioned.suspendIdle()).toEqual([]);
  });

  it("gives a runtime made without options the screen limit and the active cap of the environment", async () => {
    vi.stubEnv("SANDBOX_TEAM_SCREEN_LIMIT", "1");
    vi.stubEnv("SANDBOX_IDLE_MS", "0");
    vi.stubEnv("COMPUTER_MAX_ACTIVE_MS", "60000");
    let now = 1_000_000;
    const runtime = createComputerRuntime({
      provider: createFakeProvider({ capabilities: { billsWhileRunning: true } }),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "settings-")) }),
      clock: () => now,
    });
    // One desktop per Team computer: the second bot's is refused.
    const alpha = runtime.startRun({ workspaceId: "caps", botId: "alpha" });
    const beta = runtime.startRun({ workspaceId: "caps", botId: "beta" });
    await alpha.desktop();
    await expect(beta.desktop()).rejects.toMatchObject({ code: "MULTI_SCREEN_UNAVAILABLE" });
    await alpha.end("completed");
    await beta.end("completed");
    // Never idle (0), but a billing computer stops a minute after it started.
    now += 59_000;
    expect(await runtime.suspendIdle()).toEqual([]);
    now += 2_000;
    expect(await runtime.suspendIdle()).toEqual(["team-caps"]);
    expect((await runtime.leases.getComputer("team-caps"))?.runs.at(-1)?.endReason).toBe("active_limit");
  });
});
