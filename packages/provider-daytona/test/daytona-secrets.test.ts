import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, SaidRecorder, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { daytonaProvider } from "../src/index.js";
import { parsePreviewHost } from "../src/testing/index.js";
import { daytonaTestEnvironment, TEST_API_KEY } from "./daytona-test-environment.js";

// Everything this package and the runtime over it say — log lines, events,
// errors (also ones whose server text echoes a secret), the console, the
// sandbox's environment, an exported home and a saved checkpoint — is
// searched for the API key and every preview token handed out.
const env = await daytonaTestEnvironment("daytona: no secrets in logs, events, errors or snapshots");
if (!env.missing) {
  const record = new SaidRecorder();
  const provider = env.provider();
  const owned: Machine[] = [];
  const tokens: string[] = [];

  describe("daytona: no secrets in logs, events, errors or snapshots", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("never says the API key or a preview token", async () => {
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
        const machine = await run.machine();
        owned.push(machine);
        await machine.files.write("notes.txt", new TextEncoder().encode("hello"), record.ctx());

        // Preview URLs carry their token: the caller gets it, nothing else may.
        for (const port of [6080, 8080]) {
          const url = new URL(
            await (machine.portUrl as NonNullable<Machine["portUrl"]>)(port, { private: true }, record.ctx()),
          );
          const token = parsePreviewHost(env.emulator.previewHostOf(url.href) ?? "")?.idOrToken;
          expect(token).toBeTruthy();
          tokens.push(token as string);
        }

        // A desktop: its calls go to the resident service through a signed preview URL, and a screen grant carries one.
        const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("alpha", record.ctx());
        await desktop.observe(record.ctx());
        const screen = new URL((await desktop.screenEndpoint("view", record.ctx())).url);
        tokens.push(parsePreviewHost(env.emulator.previewHostOf(screen.href) ?? "")?.idOrToken as string);
        await desktop.release(record.ctx());

        // A server that echoes the secrets back in its error text.
        env.emulator.inject({
          path: /signed-preview-url$/,
          status: 500,
          message: `upstream failed for Authorization: Bearer ${TEST_API_KEY} (last token ${tokens[0]})`,
          times: 20,
        });
        const echoed = await failureOf(
          (machine.portUrl as NonNullable<Machine["portUrl"]>)(
            6080,
            { private: true },
            opContext({ timeoutMs: 3_000 }),
          ),
        );
        record.noteError(echoed);
        env.emulator.inject({
          path: /\/process\/session$/,
          status: 422,
          message: `bad key ${TEST_API_KEY}`,
        });
        record.noteError(await failureOf(machine.exec({ argv: ["true"] }, record.ctx())));

        // A refused key: its error names no key either (neither ours nor the refused one's value).
        const refused = daytonaProvider({
          apiKey: `${TEST_API_KEY}-revoked`,
          apiUrl: env.emulator.apiUrl,
          snapshot: env.image,
          stateUpdates: "polling",
        });
        record.noteError(await failureOf(refused.reconnect(machine.ref, record.ctx())));
        record.noteError(
          await failureOf(refused.provision({ computerId: "refused", homeKey: "refused" }, record.ctx())),
        );

        // The sandbox's environment and an exported home.
        await record.noteMachine(machine);

        // The provider's own log lines.
        const direct = await provider.provision(
          { computerId: "direct", homeKey: `direct-${Date.now()}` },
          record.ctx(),
        );
        owned.push(direct);
        await direct.destroy(record.ctx());

        // The checkpoint the run saves at its end.
        await run.end("completed");
        await record.noteFiles(dataDir);
      } finally {
        restoreConsole();
      }

      // The search is real: the run said things, and the errors carry their context.
      record.expectNeverSaid([TEST_API_KEY, ...tokens], ["daytona machine provisioned", "[redacted]"]);
    }, 150_000);
  });
}
