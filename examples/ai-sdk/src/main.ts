// An AI SDK agent loop (generateText with tools) works on its own computer:
// it writes a file, checks it with the shell and looks at its screen. With
// ANTHROPIC_API_KEY set it runs against the real model; without one it says
// how to get one. The test runs the same loop with the AI SDK's mock model
// (test/ai-sdk.test.ts).

import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { anthropic } from "@ai-sdk/anthropic";
import { generateText, stepCountIs } from "ai";
import { createComputerToolSet } from "./computer-tools.js";

if (!process.env.ANTHROPIC_API_KEY) {
  console.log(`No model key found. Set ANTHROPIC_API_KEY (https://console.anthropic.com/settings/keys) and run again:

  ANTHROPIC_API_KEY=... npm run start -w examples/ai-sdk

Without a key, the same loop runs with the AI SDK's mock model in: npx vitest run examples/ai-sdk`);
  process.exit(0);
}

const runtime = createComputerRuntime({
  provider: createFakeProvider(),
  stateStore: new MemoryStateStore(),
  homeStore: new LocalAgentHomeStore({ dataDir: "out/ai-sdk-data" }),
  idleMs: 0,
});
const run = runtime.startRun({ workspaceId: "ai-sdk-demo", botId: "ai" });
const model = anthropic("claude-sonnet-4-5");
const tools = createComputerToolSet({
  run,
  capabilities: runtime.capabilities,
  onActivity: (e) => console.log(`activity ${e.tool}: ${e.summary}`),
  model,
});

const result = await generateText({
  model,
  tools,
  stopWhen: stepCountIs(12),
  system: "You work on your own Linux computer through tools. Paths are relative to your folder.",
  prompt:
    "Write a haiku about computers to haiku.txt, count its words with the shell, take one screenshot, and tell me the word count and what you saw.",
  onStepFinish: (step) => {
    for (const call of step.toolCalls) console.log(`tool ${call.toolName} ${JSON.stringify(call.input)}`);
  },
});
console.log(`assistant: ${result.text}`);
await run.end("completed");
process.exit(0);
