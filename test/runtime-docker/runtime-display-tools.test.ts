import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { ComputerToolSession, callTool, computerTools, createComputerRuntime } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";

// Issue 46: on the default Docker computer, whose display runs in a
// container of its own, the agent tools still open the bot's files and
// start applications on its screen (the display-container suite in
// provider-docker checks the desktop calls beneath, and that the bot's
// processes get no display). Vision on, so the tools say which window is
// active after each call.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "the agent tools on the default Docker computer's display",
);

if (!env.missing) {
  describe("the agent tools on the default Docker computer's display", () => {
    it("open_path shows a file of the bot's folder on its screen, and launch_app starts the browser", async () => {
      const dataDir = await temporaryDataDir();
      const provider = dockerProvider({ docker: env.docker, image: env.image, dataDir });
      const runtime = createComputerRuntime({
        provider,
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 0,
      });
      const workspaceId = `display-tools-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "opener" });
      const run = runtime.startRun({ workspaceId, botId: "opener" });
      const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true });
      const call = async (name: string, input: Record<string, unknown>) => {
        const tool = computerTools(session).find((t) => t.name === name);
        if (!tool) throw new Error(`no ${name} tool`);
        const result = await callTool(tool, input, session);
        return result.content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("\n");
      };
      try {
        await call("write_file", { path: "minutes.txt", content: "Minutes of the meeting\n" });
        expect(await call("open_path", { path: "minutes.txt" })).toMatch(/^Opened minutes.txt on your screen/);
        // The browser's new tab is the active window, titled by the file.
        let seen = "";
        const until = Date.now() + 15_000;
        while (Date.now() < until && !/active window "[^"]*minutes\.txt/.test(seen)) {
          seen = await call("computer_observe", {});
        }
        expect(seen).toMatch(/active window "[^"]*minutes\.txt/);
        expect(await call("open_path", { path: "missing.txt" })).toMatch(/^NOT_FOUND/);
        await call("write_file", { path: "data.xlsx", content: "x" });
        expect(await call("open_path", { path: "data.xlsx" })).toMatch(/^UNSUPPORTED: .*browser/);
        expect(await call("launch_app", { name: "browser" })).toMatch(/^Started browser/);
      } finally {
        await run.end("completed").catch(() => {});
        const ref = (await runtime.leases.getComputer(computerId))?.providerRef;
        const machine = ref ? await provider.reconnect(ref as `${string}:${string}`) : "gone";
        if (machine !== "gone") await machine.destroy();
      }
    }, 240_000);
  });
}
