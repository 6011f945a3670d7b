import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";

/** A runtime on the in-process fake provider and one run, for this package's tests. */
export async function fakeComputer(botId = "alpha") {
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mcp-server-")) }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: "mcp", botId });
  return { runtime, run };
}
