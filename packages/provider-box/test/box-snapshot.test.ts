import { AgentComputerError, type Logger, type Machine, opContext } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { boxProvider, snapshotNameOf } from "../src/index.js";
import { ACCOUNT_ENV, boxTestEnvironment, TEST_API_KEY } from "./box-test-environment.js";

// The named snapshot: missing at first, so the first computer runs the
// setup itself while one build runs in the background from a fresh sandbox
// (noEnv, no home, no bot data); once ready, new computers start from it
// and do not run the setup; the log says missing, building, ready.
const env = await boxTestEnvironment("box: the named snapshot");
if (!env.missing) {
  // Each run of the setup adds a line; the environment it saw is kept beside.
  const SETUP = `set -e
mkdir -p /home/user/.tools
cat /proc/sys/kernel/random/uuid >> /home/user/.tools/runs
env > /home/user/.tools/env
sleep 1
# setup ${Date.now()}`;
  const name = snapshotNameOf(SETUP);
  const owned: Machine[] = [];
  const said: { message: string; state?: string }[] = [];
  const logger: Logger = {
    debug: () => {},
    info: (message, fields) => said.push({ message, state: (fields as { state?: string })?.state }),
    warn: (message, fields) => said.push({ message, state: (fields as { state?: string })?.state }),
    error: (message) => said.push({ message }),
  };
  const ctx = () => opContext({ timeoutMs: 120_000, logger });
  const states = () => said.filter((s) => s.message === "snapshot").map((s) => s.state);
  const sh = async (m: Machine, line: string) => new TextDecoder().decode((await m.exec({ shell: line })).stdout);

  describe("boat: the named snapshot", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("is built once in the background from a fresh box while the first computer installs the tools itself", async () => {
      expect(name).toMatch(/^agent-computer-[0-9a-f]{16}$/);
      const provider = env.provider({ setup: SETUP });
      const first = await provider.provision({ computerId: "snap-1", homeKey: `snap-1-${Date.now()}` }, ctx());
      owned.push(first);
      expect(env.emulator.froms.at(-1)).toBeNull();
      expect((await sh(first, "cat /home/user/.tools/runs")).trim().split("\n")).toHaveLength(1);
      expect(states().slice(0, 2)).toEqual(["missing", "building"]);

      await expect.poll(() => env.emulator.namedSnapshot(name)?.status, { timeout: 90_000 }).toBe("ready");
      const built = env.emulator.namedSnapshot(name) as { sourceSandboxId: string };
      // From its own fresh sandbox, created with noEnv, deleted once saved.
      expect(`box:${built.sourceSandboxId}`).not.toBe(first.ref);
      await expect.poll(() => env.emulator.stateOf(built.sourceSandboxId), { timeout: 30_000 }).toBe("deleted");
      expect(env.emulator.noEnvSeen.every(Boolean)).toBe(true);

      // Ready: the next computer starts from it and runs no setup.
      const second = await provider.provision({ computerId: "snap-2", homeKey: `snap-2-${Date.now()}` }, ctx());
      owned.push(second);
      expect(env.emulator.froms.at(-1)).toBe(name);
      expect(states()).toEqual(["missing", "building", "ready"]);
      const runs = (await sh(second, "cat /home/user/.tools/runs")).trim().split("\n");
      expect(runs).toHaveLength(1);
      expect(runs[0]).not.toBe((await sh(first, "cat /home/user/.tools/runs")).trim());
      // No account environment and no bot data in the snapshot.
      expect(await sh(second, "cat /home/user/.tools/env")).not.toContain(ACCOUNT_ENV.ACCOUNT_SECRET);
      expect(await second.files.list("")).toEqual([]);
      expect(said.map((s) => JSON.stringify(s)).join("\n")).not.toContain(TEST_API_KEY);
    }, 240_000);

    it("a new provider with the same setup finds the snapshot ready; auto without a setup is UNSUPPORTED", async () => {
      said.length = 0;
      const again = env.provider({ setup: SETUP, snapshot: "auto" });
      const third = await again.provision({ computerId: "snap-3", homeKey: `snap-3-${Date.now()}` }, ctx());
      owned.push(third);
      expect(env.emulator.froms.at(-1)).toBe(name);
      expect(states()).toEqual(["ready"]);
      const refused = await failureOf(
        Promise.resolve().then(() =>
          boxProvider({ apiKey: TEST_API_KEY, baseUrl: env.emulator.baseUrl, snapshot: "auto" }),
        ),
      );
      expect(AgentComputerError.is(refused, "UNSUPPORTED")).toBe(true);
    }, 120_000);
  });
}
