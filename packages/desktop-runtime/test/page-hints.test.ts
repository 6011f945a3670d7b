import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ComputerToolSession,
  callTool,
  computerTools,
  createComputerRuntime,
  LocalAgentHomeStore,
  MemoryStateStore,
  textOf,
} from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { PAGE_FIXTURES } from "@agent-computer/testing/conformance";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// A scripted model that obeys only the text the page tools hand it: after
// browser_navigate, whenever a snapshot ends in a "read on with
// browser_snapshot {...}" hint it makes exactly that call, and nothing
// else. On the fake provider, whose desktops run the emulator browser.
let server: Server;
let base = "";
beforeAll(async () => {
  server = createServer((req, res) => {
    const html = PAGE_FIXTURES[(req.url ?? "/").slice(1)];
    res.writeHead(html ? 200 : 404, { "content-type": "text/html; charset=utf-8" }).end(html ?? "Not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("the page tools' hints, followed literally", () => {
  for (const [file, last, text, count] of [
    ["table300.html", "Open order 300", "Customer 300", 300],
    ["links200.html", "Page 200", "is about topic 200.", 200],
  ] as const) {
    it(`reach the last element of ${file} in at most 5 snapshots`, async () => {
      const runtime = createComputerRuntime({
        provider: createFakeProvider(),
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "page-hints-")) }),
        idleMs: 0,
      });
      const run = runtime.startRun({ workspaceId: "hints", botId: "alpha" });
      const session = new ComputerToolSession({
        run,
        capabilities: runtime.capabilities,
        vision: false,
      });
      const tools = computerTools(session);
      const call = async (name: string, input: unknown) => {
        const tool = tools.find((t) => t.name === name);
        if (!tool) throw new Error(`no tool ${name}`);
        return textOf(await callTool(tool, input, session));
      };
      const seen: string[] = [await call("browser_navigate", { url: `${base}/${file}` })];
      for (;;) {
        const hint = /read on with browser_snapshot (\{.*\})\]$/.exec(seen[seen.length - 1] ?? "")?.[1];
        if (!hint || seen.length >= 5) break;
        seen.push(await call("browser_snapshot", JSON.parse(hint)));
      }
      const all = seen.join("\n");
      expect(seen[seen.length - 1]).not.toContain("read on with");
      expect(seen.length).toBeLessThanOrEqual(5);
      // An element reads [ref role name], or [ref role "name" states] (runtime's renderPageSnapshot).
      const names = new Set([...all.matchAll(/\[e\d+ \w+ (?:"([^"]+)"|([^\]"]+)\])/g)].map((m) => m[1] ?? m[2]));
      expect(names.size).toBe(count);
      expect(names.has(last)).toBe(true);
      expect(all).toContain(text);
      // The last ref acts, read three snapshots later.
      const ref = new RegExp(`\\[(e\\d+) \\w+ "?${last}["\\]]`).exec(all)?.[1];
      expect(await call("browser_act", { ref, action: "scroll_into_view" })).toMatch(/done/);
      await run.end("completed");
    });
  }
});
