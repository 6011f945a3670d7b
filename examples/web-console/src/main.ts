import { join } from "node:path";
import {
  AgentComputerError,
  createComputerRuntime,
  LocalAgentHomeStore,
  MemoryStateStore,
} from "@agent-computer/runtime";
import { chooseProvider } from "./choose-provider.js";
import { ScriptedBot } from "./scripted-bot.js";
import { startWebConsole } from "./web-console.js";

// `npm run console`: two scripted bots on one Team computer, and the web
// console watching them. The provider as the quickstart chooses it
// (SANDBOX_PROVIDER; unset: Docker when an engine answers, else the fake).
const dataDir = join(process.cwd(), "out", "web-console-data");
const port = Number(process.env.PORT ?? 3100);

try {
  const chosen = await chooseProvider(dataDir);
  const homeStore = new LocalAgentHomeStore({ dataDir });
  const runtime = createComputerRuntime({ provider: chosen.provider, stateStore: new MemoryStateStore(), homeStore });

  const workspaceId = "console";
  const bots: ScriptedBot[] = [];
  const web = await startWebConsole({ runtime, homeStore, workspaceId, bots, port, provider: chosen });
  bots.push(
    new ScriptedBot("alice", {
      runtime,
      workspaceId,
      colour: "rgb(20,120,220)",
      port: 8801,
      onActivity: web.onActivity,
    }),
    new ScriptedBot("bob", { runtime, workspaceId, colour: "rgb(230,120,20)", port: 8802, onActivity: web.onActivity }),
  );
  // The page is up before the computer: it shows the bots starting (a first start can take a minute).
  console.log(`Web console: ${web.url}  (Ctrl-C to stop)`);
  for (const bot of bots)
    bot.start().then(
      () => console.log(`${bot.botId} is running.`),
      (error) => console.log(`${bot.botId} could not start: ${error instanceof Error ? error.message : error}`),
    );

  process.once("SIGINT", async () => {
    console.log("Stopping the bots and saving the computer's home…");
    for (const bot of bots) if (bot.state !== "idle" && bot.state !== "failed") await bot.stop().catch(() => {});
    await web.close();
    await runtime.stopComputer(web.computerId).catch(() => {}); // saved; the next start resumes it
    process.exit(0);
  });
} catch (error) {
  // A provider that cannot be used (a missing key, no engine) or a port in use: the reason, without a stack.
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE")
    console.error(`Port ${port} is in use: set PORT to another one (PORT=3101 npm run console).`);
  else console.error(AgentComputerError.is(error) ? `${error.code}: ${error.message}` : error);
  process.exit(1);
}
