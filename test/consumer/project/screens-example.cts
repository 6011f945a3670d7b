// screens-example.mts as a CommonJS app: the CJS build finds noVNC and
// xterm from its own location too (tsup's import.meta.url shim).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createComputerRuntime, LocalAgentHomeStore, MemoryStateStore } from "@agent-computer/runtime";
import { createScreens, runtimeScreenAuthority } from "@agent-computer/screens";
import { createFakeProvider } from "@agent-computer/testing";

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "consumer-screens-cjs-"));
  const runtime = createComputerRuntime({
    provider: createFakeProvider({ root: join(dataDir, "machines") }),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
  });
  const screens = createScreens({ authority: runtimeScreenAuthority(runtime), secret: randomBytes(32) });
  const server = createServer((req, res) => {
    if (!screens.handleRequest(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const get = async (path: string): Promise<string> => {
    const response = await fetch(origin + path);
    assert.equal(response.status, 200, `GET ${path}`);
    return response.text();
  };
  const served: string[] = [];
  for (const page of [screens.viewerPath, screens.terminalPath]) {
    const html = await get(page);
    const assets = [...html.matchAll(/\/screens\/(?:novnc|xterm)\/[A-Za-z0-9._/-]+\.(?:js|css)/g)].map((m) => m[0]);
    assert.ok(assets.length > 0, `${page} names the files it loads`);
    for (const asset of new Set(assets)) {
      assert.ok((await get(asset)).length > 100, `${asset} has its bytes`);
      served.push(asset);
    }
  }
  await screens.close();
  await new Promise((resolve) => server.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
  console.log(`screens (CJS): viewer and terminal pages, and ${served.join(", ")}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
