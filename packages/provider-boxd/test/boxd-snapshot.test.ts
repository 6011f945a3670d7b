import { AgentComputerError, type Logger, type Machine, opContext } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { boxdProvider, setupSnapshotNameOf } from "../src/index.js";
import { boxdTestEnvironment, TEST_API_KEY, TEST_ORG } from "./boxd-test-environment.js";

// The setup snapshot: missing at first, so the first machine runs the setup
// itself while one build runs in the background in a machine of its own
// (CreateSnapshot, pending until stored, then GetSnapshot says ready); once
// ready, new machines start from it (CreateVmFromSnapshot) and run no
// setup; the log says missing, building, ready. A capture that fails is
// logged failed, and a later provision builds again.
const env = await boxdTestEnvironment("boxd: the setup snapshot");
if (!env.missing) {
  // Each run of the setup adds a line; the environment it saw is kept beside.
  const setupOf = (tag: string) => `set -e
mkdir -p /home/boxd/.tools
cat /proc/sys/kernel/random/uuid >> /home/boxd/.tools/runs
env > /home/boxd/.tools/env
sleep 1
# setup ${tag} ${Date.now()}`;
  const SETUP = setupOf("first");
  const name = setupSnapshotNameOf(SETUP);
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
  const lastCreate = () =>
    env.emulator.recorder.calls
      .filter((c) => c.operation === "CreateVm" || c.operation === "CreateVmFromSnapshot")
      .at(-1)?.operation;

  describe("boxd: the setup snapshot", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("is built once in the background in a machine of its own while the first machine runs the setup itself", async () => {
      expect(name).toMatch(/^ac-setup-[0-9a-f]{16}$/);
      const provider = env.provider({ setup: SETUP });
      const first = await provider.provision({ computerId: "snap-1", homeKey: `snap-1-${Date.now()}` }, ctx());
      owned.push(first);
      expect((await sh(first, "cat /home/boxd/.tools/runs")).trim().split("\n")).toHaveLength(1);
      expect(states().slice(0, 2)).toEqual(["missing", "building"]);

      await expect.poll(() => env.emulator.snapshots.find(TEST_ORG, name)?.status, { timeout: 90_000 }).toBe("ready");
      const built = env.emulator.snapshots.find(TEST_ORG, name) as { sourceVm: string };
      // Taken of its own machine, which is destroyed once the snapshot is stored.
      expect(built.sourceVm).not.toBe(env.emulator.vms.find(TEST_ORG, first.ref.slice(5))?.vm_id);
      await expect.poll(() => env.emulator.vms.find(TEST_ORG, built.sourceVm), { timeout: 30_000 }).toBeUndefined();

      // Ready: the next machine starts from it and runs no setup.
      const second = await provider.provision({ computerId: "snap-2", homeKey: `snap-2-${Date.now()}` }, ctx());
      owned.push(second);
      expect(lastCreate()).toBe("CreateVmFromSnapshot");
      expect(states()).toEqual(["missing", "building", "ready"]);
      const runs = (await sh(second, "cat /home/boxd/.tools/runs")).trim().split("\n");
      expect(runs).toHaveLength(1);
      expect(runs[0]).not.toBe((await sh(first, "cat /home/boxd/.tools/runs")).trim());
      // No key in the snapshot, and no bot data: the home is new.
      expect(await sh(second, "cat /home/boxd/.tools/env")).not.toContain(TEST_API_KEY);
      expect(await second.files.list("")).toEqual([]);
      expect(said.map((s) => JSON.stringify(s)).join("\n")).not.toContain(TEST_API_KEY);
    }, 240_000);

    it("a new provider with the same setup finds it ready; auto without a setup is UNSUPPORTED", async () => {
      said.length = 0;
      const again = env.provider({ setup: SETUP, snapshot: "auto" });
      const third = await again.provision({ computerId: "snap-3", homeKey: `snap-3-${Date.now()}` }, ctx());
      owned.push(third);
      expect(lastCreate()).toBe("CreateVmFromSnapshot");
      expect(states()).toEqual(["ready"]);
      const refused = await failureOf(
        Promise.resolve().then(() =>
          boxdProvider(
            { apiKey: TEST_API_KEY, apiUrl: env.emulator.apiUrl, tokenUrl: env.emulator.tokenUrl, snapshot: "auto" },
            {},
          ),
        ),
      );
      expect(AgentComputerError.is(refused, "UNSUPPORTED")).toBe(true);
    }, 120_000);

    it("a capture that fails is logged failed; a later provision builds it again", async () => {
      said.length = 0;
      const setup = setupOf("retried");
      const retried = setupSnapshotNameOf(setup);
      env.emulator.snapshots.failNext();
      const provider = env.provider({ setup });
      const first = await provider.provision({ computerId: "snap-4", homeKey: `snap-4-${Date.now()}` }, ctx());
      owned.push(first);
      await expect
        .poll(() => env.emulator.snapshots.find(TEST_ORG, retried)?.status, { timeout: 90_000 })
        .toBe("failed");
      await expect.poll(() => states().at(-1), { timeout: 10_000 }).toBe("failed");
      const second = await provider.provision({ computerId: "snap-5", homeKey: `snap-5-${Date.now()}` }, ctx());
      owned.push(second);
      expect(lastCreate()).toBe("CreateVm");
      await expect
        .poll(() => env.emulator.snapshots.find(TEST_ORG, retried)?.status, { timeout: 90_000 })
        .toBe("ready");
      expect(env.emulator.snapshots.find(TEST_ORG, retried)?.version).toBe(2);
      expect(states()).toEqual(["missing", "building", "failed", "missing", "building"]);
    }, 240_000);
  });
}
