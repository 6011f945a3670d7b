import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, SaidRecorder, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { createosProvider } from "../src/index.js";
import { createosTestEnvironment, TEST_API_KEY, TEST_ROOTFS } from "./createos-test-environment.js";

// The API key appears in no log line, event, error, console line, VM
// environment, exported home or saved checkpoint, also when the service
// echoes it back; list finds the provider's computers across pages of an
// account with many sandboxes, and no one else's.
const env = await createosTestEnvironment("createos: secrets and lists");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];

  describe("createos: secrets and lists", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("never says the API key", async () => {
      const record = new SaidRecorder();
      const restoreConsole = record.captureConsole();
      try {
        const dataDir = await temporaryDataDir();
        const runtime = createComputerRuntime({
          provider,
          stateStore: new MemoryStateStore(),
          homeStore: new LocalAgentHomeStore({ dataDir }),
          logger: record.logger,
          onEvent: record.onEvent,
        });
        const run = runtime.startRun({ workspaceId: `secrets-${Date.now()}`, botId: "alpha" });
        const computer = await run.machine();
        owned.push(computer);
        await computer.files.write("notes.txt", new TextEncoder().encode("hello"), record.ctx());

        // A service that echoes the key back in its refusal (a 400 the definition lists for createProcess).
        env.emulator.inject({ method: "POST", path: /\/processes$/, status: 400, message: `bad key ${TEST_API_KEY}` });
        const echoed = await failureOf(computer.exec({ argv: ["true"] }, record.ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        record.noteError(echoed);

        // A refused key: an error, never "gone", naming no key.
        const refused = createosProvider(
          { apiKey: `${TEST_API_KEY}-revoked`, baseUrl: env.emulator.baseUrl, rootfs: TEST_ROOTFS },
          {},
        );
        const refusal = await failureOf(refused.reconnect(computer.ref, record.ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        record.noteError(refusal);

        // The VM's environment and an exported home.
        await record.noteMachine(computer);
        // The provider's own log lines, and the checkpoint the run saves at its end.
        const direct = await provider.provision(
          { computerId: "direct", homeKey: `direct-${Date.now()}` },
          record.ctx(),
        );
        await direct.stop(record.ctx());
        await direct.destroy(record.ctx());
        await run.end("completed");
        await record.noteFiles(dataDir);
      } finally {
        restoreConsole();
      }
      // The search is real: the run said things, and the errors carry their context.
      record.expectNeverSaid([TEST_API_KEY], ["sandbox provisioned", "[redacted]"]);
    }, 150_000);

    it("finds its computers across pages of an account with many sandboxes, and no one else's", async () => {
      const machine = await provider.provision({ computerId: "listed", homeKey: `listed-${Date.now()}` });
      owned.push(machine);
      // 600 sandboxes of someone else: more than one page of 500 (COMPATIBILITY.md: the server clamps `limit` to 500).
      const foreign = env.emulator.addForeignSandboxes(600);
      const lists = () => env.emulator.requests.filter((r) => r === "GET /v1/sandboxes").length;
      const before = lists();
      expect(await provider.list({ labels: { "agent-computer.org/computer-id": "listed" } })).toEqual([machine.ref]);
      expect(lists()).toBeGreaterThanOrEqual(before + 2);
      expect((await provider.list({ labels: {} })).some((ref) => foreign.includes(ref.slice(9)))).toBe(false);
      expect(await provider.reconnect(`createos:${foreign[0]}`)).toBe("gone");
      const name = env.emulator.nameOf(machine.ref.slice(9)) as string;
      expect(name).toMatch(/^ac-s\d+-[0-9a-f]{4}(-[0-9a-f]{6})+$/);
      expect(name.length).toBeLessThanOrEqual(63);
    }, 60_000);
  });
}
