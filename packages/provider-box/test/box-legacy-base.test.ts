import { randomBytes } from "node:crypto";
import type { Machine } from "@agent-computer/core";
import { afterAll, describe, expect, it } from "vitest";
import { boxTestEnvironment } from "./box-test-environment.js";

// The legacy Box base (`/api/box/v1`, `/boxes`, answers under `box`) still
// answers, so a deployment configured with it must keep working. The two
// bases differ only in their words (src/testing/boat-legacy.ts), not in
// behaviour, so the whole contract runs once, on Boat's base
// (box-provider.conformance.test.ts), and here one machine's life walks
// every operation the provider calls, each held to the definition in
// legacy words, and the test fails if any of them was not reached.
const env = await boxTestEnvironment("boat on the legacy Box base", {}, "box");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

  describe("boat on the legacy Box base", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("provisions, runs, moves files and homes, stops, resumes, lists and destroys", async () => {
      const labels = { "legacy-run": `run-${Date.now()}` };
      const machine = await provider.provision({ computerId: "legacy", homeKey: `legacy-${Date.now()}`, labels });
      owned.push(machine);
      expect(machine.ref).toMatch(/^box:/);

      const input = randomBytes(64 * 1024);
      const ran = await machine.exec({ argv: ["sha256sum"], stdin: input, cwd: "." });
      expect(ran.exitCode).toBe(0);
      const route = await machine.portUrl?.(8080, { private: true });
      expect(route && new URL(route).searchParams.has("_token")).toBe(true);
      await machine.files.write("notes/kept.txt", new TextEncoder().encode("kept"));
      expect(text(await machine.files.read("notes/kept.txt"))).toBe("kept");
      expect((await machine.files.list("notes")).map((e) => e.path)).toContain("notes/kept.txt");

      const archive = await machine.files.exportWorkspace();
      const copy = await provider.provision({ computerId: "legacy-copy", homeKey: `legacy-copy-${Date.now()}` });
      owned.push(copy);
      await copy.files.importWorkspace(archive);
      expect(text(await copy.files.read("notes/kept.txt"))).toBe("kept");

      expect(await provider.list({ labels })).toEqual([machine.ref]);
      await machine.stop();
      const resumed = await provider.reconnect(machine.ref);
      if (resumed === "gone") throw new Error("a stopped legacy box was gone on reconnect");
      expect(text(await resumed.files.read("notes/kept.txt"))).toBe("kept");
      await resumed.destroy();
      expect(await provider.reconnect(machine.ref)).toBe("gone");

      const reached = new Set(env.emulator.recorder.calls.map((call) => call.operation));
      expect([...EVERY_OPERATION_THE_PROVIDER_CALLS].filter((op) => !reached.has(op))).toEqual([]);
      expect(env.emulator.requestsOnBase).toEqual({ boat: 0, box: env.emulator.requests.length });
    }, 180_000);
  });
}

/**
 * boat-v1.yaml's operations that src/boat-client.ts calls in a machine's
 * life. Not here: the named snapshots of image builds (box-snapshot.test.ts)
 * and op:commandStatus, asked only of a command whose supervisor vanished
 * (box-exec.test.ts).
 */
const EVERY_OPERATION_THE_PROVIDER_CALLS = [
  "create",
  "get",
  "update",
  "sandboxes",
  "command",
  "hostPort",
  "writeFile",
  "readFile",
  "stop",
  "resume",
  "deleteSandbox",
  "getDeletionOperation",
];
