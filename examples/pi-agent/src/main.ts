// A Pi agent exports the contacts of a small web app on its own computer.
// With ANTHROPIC_API_KEY or OPENAI_API_KEY set it runs against the real
// model; without one it says how to get one. The test runs the same flow
// with a scripted model (test/pi-replay.test.ts).

import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { getModel } from "@mariozechner/pi-ai";
import { createComputerAgent } from "./computer-agent.js";
import { contactsPage, randomContacts } from "./contacts-app.js";

const anthropic = process.env.ANTHROPIC_API_KEY;
const openai = process.env.OPENAI_API_KEY;
if (!anthropic && !openai) {
  console.log(`No model key found. Set ANTHROPIC_API_KEY (https://console.anthropic.com/settings/keys)
or OPENAI_API_KEY (https://platform.openai.com/api-keys) and run again:

  ANTHROPIC_API_KEY=... npm run start -w examples/pi-agent

Without a key, the same flow runs with a scripted model in: npx vitest run examples/pi-agent`);
  process.exit(0);
}

const model = anthropic ? getModel("anthropic", "claude-sonnet-4-5") : getModel("openai", "gpt-4.1");
const runtime = createComputerRuntime({
  provider: createFakeProvider(),
  stateStore: new MemoryStateStore(),
  homeStore: new LocalAgentHomeStore({ dataDir: "out/pi-agent-data" }),
  idleMs: 0,
});
const run = runtime.startRun({ workspaceId: "pi-demo", botId: "pi" });
const machine = await run.machine();
await machine.files.write("bots/pi/site/index.html", new TextEncoder().encode(contactsPage(randomContacts())));
await machine.exec({
  shell: "(python3 -m http.server 8790 --bind 127.0.0.1 --directory site >/dev/null 2>&1 &)",
  cwd: run.workdir,
});

const agent = createComputerAgent({
  run,
  capabilities: runtime.capabilities,
  model,
  onActivity: (e) => console.log(`activity ${e.tool}: ${e.summary}`),
  getApiKey: (provider) => (provider === "anthropic" ? anthropic : openai),
});
agent.subscribe((event) => {
  if (event.type === "message_end" && event.message.role === "assistant") {
    for (const part of event.message.content) if (part.type === "text") console.log(`assistant: ${part.text}`);
  }
});
await agent.prompt(
  "Open http://127.0.0.1:8790/ in your browser, show the contacts, and save them as contacts.csv (columns name,email) in your folder. Then tell me how many you saved.",
);
await run.end("completed");
process.exit(0);
