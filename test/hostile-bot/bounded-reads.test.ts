import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { ComputerToolSession, callTool, computerTools, createComputerRuntime, textOf } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// A hostile bot makes files whose listed size is huge and folders with more
// entries than a model can use, then asks the tools for a few bytes: the host
// must read only what the tools return.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: bounded reads",
);

const MiB = 1024 * 1024;

if (!env.missing) {
  describe("hostile bot: bounded reads", async () => {
    const dataDir = await temporaryDataDir();
    const runtime = createComputerRuntime({
      provider: env.provider({ dataDir }),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir }),
    });
    const workspaceId = `bounded-${Date.now().toString(36)}`;
    const run = runtime.startRun({ workspaceId, botId: "alpha" });
    const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: false });
    const tools = computerTools(session);
    const call = async (name: string, input: unknown) => {
      const tool = tools.find((t) => t.name === name);
      if (!tool) throw new Error(`no tool ${name}`);
      return textOf(await callTool(tool, input, session));
    };
    afterAll(async () => {
      await run.end("completed");
      await runtime.deleteComputer(runtime.computerIdFor({ workspaceId, botId: "alpha" }));
    });

    it("read_file with maxBytes 16 on a 1.5 GB sparse file keeps the host's RSS growth under 50 MiB", async () => {
      await call("shell", { command: "printf 'hello, sparse!!!' > big.log && truncate -s 1500M big.log" });
      global.gc?.();
      const before = process.memoryUsage().rss;
      const text = await call("read_file", { path: "big.log", maxBytes: 16 });
      const growth = process.memoryUsage().rss - before;
      expect(text).toMatch(/^hello, sparse!!!\n\[\.\.\. the file goes on past 16 bytes/);
      expect(growth).toBeLessThan(50 * MiB);
    }, 120_000);

    it("list_files on a folder of 5,000 entries shows 500 and says how to see the rest", async () => {
      await call("shell", { command: "mkdir many && cd many && seq -w 1 5000 | xargs touch" });
      const text = await call("list_files", { path: "many" });
      const lines = text.split("\n");
      expect(lines).toHaveLength(501);
      expect(lines.at(-1)).toMatch(/more than 500 entries; list a subfolder/);
    }, 120_000);
  });
}
