import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { type Logger, type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it, vi } from "vitest";
import { daytonaProvider } from "../src/index.js";
import { parsePreviewHost } from "../src/testing/index.js";
import { daytonaTestEnvironment, TEST_API_KEY } from "./daytona-test-environment.js";

// Everything this package and the runtime over it say — log lines, events,
// errors (also ones whose server text echoes a secret), the console, the
// sandbox's environment, an exported home and a saved checkpoint — is
// searched for the API key and every preview token handed out.
const env = await daytonaTestEnvironment("daytona: no secrets in logs, events, errors or snapshots");
if (!env.missing) {
  const said: string[] = [];
  const logger: Logger = {
    debug: (m, f) => said.push(JSON.stringify([m, f])),
    info: (m, f) => said.push(JSON.stringify([m, f])),
    warn: (m, f) => said.push(JSON.stringify([m, f])),
    error: (m, f) => said.push(JSON.stringify([m, f])),
  };
  const ctx = () => opContext({ timeoutMs: 60_000, logger });
  const provider = env.provider();
  const owned: Machine[] = [];
  const tokens: string[] = [];
  const noteError = (error: unknown) => {
    said.push(String(error), JSON.stringify(error), String((error as Error)?.stack), String((error as Error)?.cause));
  };

  describe("daytona: no secrets in logs, events, errors or snapshots", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("never says the API key or a preview token", async () => {
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
        const machine = await run.machine();
        owned.push(machine);
        await machine.files.write("notes.txt", new TextEncoder().encode("hello"), ctx());

        // Preview URLs carry their token: the caller gets it, nothing else may.
        for (const port of [6080, 8080]) {
          const url = new URL(
            await (machine.portUrl as NonNullable<Machine["portUrl"]>)(port, { private: true }, ctx()),
          );
          const token = parsePreviewHost(env.emulator.previewHostOf(url.href) ?? "")?.idOrToken;
          expect(token).toBeTruthy();
          tokens.push(token as string);
        }

        // A desktop: its calls go to the resident service through a signed preview URL, and a screen grant carries one.
        const desktop = await (machine.openDesktop as NonNullable<Machine["openDesktop"]>)("alpha", ctx());
        await desktop.observe(ctx());
        const screen = new URL((await desktop.screenEndpoint("view", ctx())).url);
        tokens.push(parsePreviewHost(env.emulator.previewHostOf(screen.href) ?? "")?.idOrToken as string);
        await desktop.release(ctx());

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
        noteError(echoed);
        env.emulator.inject({
          path: /\/process\/session$/,
          status: 422,
          message: `bad key ${TEST_API_KEY}`,
        });
        noteError(await failureOf(machine.exec({ argv: ["true"] }, ctx())));

        // A refused key: its error names no key either (neither ours nor the refused one's value).
        const refused = daytonaProvider({
          apiKey: `${TEST_API_KEY}-revoked`,
          apiUrl: env.emulator.apiUrl,
          snapshot: env.image,
          stateUpdates: "polling",
        });
        noteError(await failureOf(refused.reconnect(machine.ref, ctx())));
        noteError(await failureOf(refused.provision({ computerId: "refused", homeKey: "refused" }, ctx())));

        // The sandbox's environment and an exported home.
        const environment = await machine.exec({ argv: ["env"] }, ctx());
        said.push(Buffer.from(environment.stdout).toString("latin1"));
        const chunks: Buffer[] = [];
        for await (const chunk of await machine.files.exportWorkspace(ctx())) chunks.push(chunk as Buffer);
        said.push(Buffer.concat(chunks).toString("latin1"));

        // The provider's own log lines.
        const direct = await provider.provision({ computerId: "direct", homeKey: `direct-${Date.now()}` }, ctx());
        owned.push(direct);
        await direct.destroy(ctx());

        // The checkpoint the run saves at its end.
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
      expect(everything).toContain("daytona machine provisioned");
      expect(everything).toContain("[redacted]");
      expect(everything).not.toContain(TEST_API_KEY);
      for (const token of tokens) expect(everything).not.toContain(token);
    }, 150_000);
  });
}
