import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Logger, type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it, vi } from "vitest";
import { boxdProvider } from "../src/index.js";
import { boxdTestEnvironment, TEST_API_KEY } from "./boxd-test-environment.js";

// The API key appears in no log line,
// event, error, console line, machine environment, exported home or saved
// checkpoint, also when the service echoes the key back in a refusal.
const env = await boxdTestEnvironment("boxd: secrets");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];

  describe("boxd: secrets", () => {
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

        // A service that echoes the key back in its refusal (INVALID_ARGUMENT, which every call may answer).
        env.emulator.fail("GetVm", { code: grpc.status.INVALID_ARGUMENT, message: `bad key ${TEST_API_KEY}` });
        const echoed = await failureOf(provider.reconnect(computer.ref, ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        noteError(echoed);

        // A refused key: an error, never "gone", naming no key.
        const refused = boxdProvider(
          { apiKey: `${TEST_API_KEY}-revoked`, apiUrl: env.emulator.apiUrl, tokenUrl: env.emulator.tokenUrl },
          {},
        );
        const refusal = await failureOf(refused.reconnect(computer.ref, ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        noteError(refusal);

        // The machine's environment and an exported home.
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
      expect(everything).toContain("machine provisioned");
      expect(everything).toContain("[redacted]");
      expect(everything).not.toContain(TEST_API_KEY);
    }, 150_000);
  });
}
