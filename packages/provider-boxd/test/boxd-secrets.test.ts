import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, SaidRecorder, temporaryDataDir } from "@agent-computer/testing/provider-test";
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
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

        // A service that echoes the key back in its refusal (INVALID_ARGUMENT, which every call may answer).
        env.emulator.fail("GetVm", { code: grpc.status.INVALID_ARGUMENT, message: `bad key ${TEST_API_KEY}` });
        const echoed = await failureOf(provider.reconnect(computer.ref, record.ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        record.noteError(echoed);

        // A refused key: an error, never "gone", naming no key.
        const refused = boxdProvider(
          { apiKey: `${TEST_API_KEY}-revoked`, apiUrl: env.emulator.apiUrl, tokenUrl: env.emulator.tokenUrl },
          {},
        );
        const refusal = await failureOf(refused.reconnect(computer.ref, record.ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        record.noteError(refusal);

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
      record.expectNeverSaid([TEST_API_KEY], ["machine provisioned", "[redacted]"]);
    }, 150_000);
  });
}
