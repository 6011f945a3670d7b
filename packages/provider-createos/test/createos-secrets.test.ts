import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Logger, type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it, vi } from "vitest";
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
      const said: string[] = [];
      const logger: Logger = {
        debug: (m, f) => said.push(JSON.stringify([m, f])),
        info: (m, f) => said.push(JSON.stringify([m, f])),
        warn: (m, f) => said.push(JSON.stringify([m, f])),
        error: (m, f) => said.push(JSON.stringify([m, f])),
      };
      const ctx = () => opContext({ timeoutMs: 60_000, logger });
      const noteError = (error: unknown) =>
        said.push(
          String(error),
          JSON.stringify(error),
          String((error as Error)?.stack),
          String((error as Error)?.cause),
        );
      const consoleSpies = (["log", "warn", "error", "info", "debug"] as const).map((name) =>
        vi.spyOn(console, name).mockImplementation((...args: unknown[]) => void said.push(args.map(String).join(" "))),
      );
      try {
        const dataDir = await temporaryDataDir();
        const runtime = createComputerRuntime({
          provider,
          stateStore: new MemoryStateStore(),
          homeStore: new LocalAgentHomeStore({ dataDir }),
          logger,
          onEvent: (e) => said.push(JSON.stringify(e)),
        });
        const run = runtime.startRun({ workspaceId: `secrets-${Date.now()}`, botId: "alpha" });
        const computer = await run.machine();
        owned.push(computer);
        await computer.files.write("notes.txt", new TextEncoder().encode("hello"), ctx());

        // A service that echoes the key back in its refusal (a 400 the definition lists for createProcess).
        env.emulator.inject({ method: "POST", path: /\/processes$/, status: 400, message: `bad key ${TEST_API_KEY}` });
        const echoed = await failureOf(computer.exec({ argv: ["true"] }, ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        noteError(echoed);

        // A refused key: an error, never "gone", naming no key.
        const refused = createosProvider(
          { apiKey: `${TEST_API_KEY}-revoked`, baseUrl: env.emulator.baseUrl, rootfs: TEST_ROOTFS },
          {},
        );
        const refusal = await failureOf(refused.reconnect(computer.ref, ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        noteError(refusal);

        // The VM's environment and an exported home.
        const environment = await computer.exec({ argv: ["env"] }, ctx());
        said.push(Buffer.from(environment.stdout).toString("latin1"));
        const chunks: Buffer[] = [];
        for await (const chunk of await computer.files.exportWorkspace(ctx())) chunks.push(chunk as Buffer);
        said.push(Buffer.concat(chunks).toString("latin1"));

        // The provider's own log lines, and the checkpoint the run saves at its end.
        const direct = await provider.provision({ computerId: "direct", homeKey: `direct-${Date.now()}` }, ctx());
        await direct.stop(ctx());
        await direct.destroy(ctx());
        await run.end("completed");
        for (const name of await readdir(dataDir, { recursive: true })) {
          const bytes = await readFile(join(dataDir, String(name))).catch(() => undefined);
          if (bytes) said.push(bytes.toString("latin1"));
        }
      } finally {
        for (const spy of consoleSpies) spy.mockRestore();
      }
      const everything = said.join("\n");
      // The search is real: the run said things, and the errors carry their context.
      expect(said.length).toBeGreaterThan(10);
      expect(everything).toContain("sandbox provisioned");
      expect(everything).toContain("[redacted]");
      expect(everything).not.toContain(TEST_API_KEY);
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
