import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { AgentComputerError, createComputerRuntime, LocalAgentHomeStore } from "@agent-computer/runtime";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { chooseProvider } from "./choose-provider.js";
import { ScriptedBot } from "./scripted-bot.js";
import { startWebConsole } from "./web-console.js";

// `npm run console`: two scripted bots on one Team computer, and the web
// console watching them. The provider as the quickstart chooses it
// (SANDBOX_PROVIDER; unset: Docker when an engine answers, else the fake).
const port = Number(process.env.PORT ?? 3100);

try {
  const chosen = await chooseProvider((name) => join(process.cwd(), "out", "web-console-data", name));
  // One folder per provider: a home the fake provider saved (files owned by
  // this host's user) is not one a Docker computer, running as uid 1000, can write.
  const dataDir = chosen.dataDir;
  const homeStore = new LocalAgentHomeStore({ dataDir });
  // The computer's record outlives this process: the next `npm run console` resumes the same computer.
  await mkdir(dataDir, { recursive: true });
  const stateStore = SqliteStateStore.open({ path: join(dataDir, "state.db") });
  const runtime = createComputerRuntime({ provider: chosen.provider, stateStore, homeStore });

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

  // Ctrl-C stops the bots and saves the home. `on`, not `once`: tsx relays
  // the same Ctrl-C to this process a second time when it is slow to answer,
  // and a signal with no listener left would end it before the home is saved.
  // Another Ctrl-C a second later quits at once.
  let stoppingSince = 0;
  const stop = async () => {
    if (stoppingSince) {
      if (Date.now() - stoppingSince > 1000) process.exit(130);
      return;
    }
    stoppingSince = Date.now();
    console.log("Stopping the bots and saving the computer's home… (Ctrl-C again to quit without saving)");
    for (const bot of bots) if (bot.state !== "idle" && bot.state !== "failed") await bot.stop().catch(() => {});
    await web.close();
    await runtime.stopComputer(web.computerId).catch(() => {}); // saved; the next start resumes it
    stateStore.close();
    console.log("Stopped.");
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
} catch (error) {
  // A provider that cannot be used (a missing key, no engine) or a port in use: the reason, without a stack.
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE")
    console.error(`Port ${port} is in use: set PORT to another one (PORT=3101 npm run console).`);
  else console.error(AgentComputerError.is(error) ? `${error.code}: ${error.message}` : error);
  process.exit(1);
}
