import { join } from "node:path";
import type { SandboxProvider } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime, LocalAgentHomeStore, MemoryStateStore } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { ScriptedBot } from "./scripted-bot.js";
import { startWebConsole } from "./web-console.js";

// `npm run console`: two scripted bots on one Team computer, and the web
// console watching them. Docker when an engine answers, else the fake provider.
const dataDir = join(process.cwd(), "out", "web-console-data");
const docker = await checkDockerHost();
const provider: SandboxProvider = docker.missing
  ? createFakeProvider()
  : dockerProvider({ docker: docker.docker, image: docker.image, dataDir });
console.log(docker.missing ? `Provider: fake, because ${docker.missing}` : "Provider: docker");
const homeStore = new LocalAgentHomeStore({ dataDir });
const runtime = createComputerRuntime({ provider, stateStore: new MemoryStateStore(), homeStore });

const workspaceId = "console";
const bots: ScriptedBot[] = [];
const web = await startWebConsole({ runtime, homeStore, workspaceId, bots, port: Number(process.env.PORT ?? 3100) });
bots.push(
  new ScriptedBot("alice", { runtime, workspaceId, colour: "rgb(20,120,220)", port: 8801, onActivity: web.onActivity }),
  new ScriptedBot("bob", { runtime, workspaceId, colour: "rgb(230,120,20)", port: 8802, onActivity: web.onActivity }),
);
for (const bot of bots) await bot.start();
console.log(`Web console: ${web.url}  (Ctrl-C to stop)`);

process.once("SIGINT", async () => {
  for (const bot of bots) if (bot.state === "running") await bot.stop();
  await web.close();
  await runtime.stopComputer(web.computerId); // saved; the next start resumes it
  process.exit(0);
});
