import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { SandboxProvider } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type ActivityEvent, createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { chooseTestProvider } from "@agent-computer/testing/provider-test";
import type { Context } from "@mariozechner/pi-ai";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { createComputerAgent } from "../src/computer-agent.js";
import { contactsCsv, contactsInText, contactsPage, randomContacts } from "../src/contacts-app.js";
import { endAndRemove, lastToolResult, servePage } from "./replay-support.js";

// A deterministic replay through real Pi: pi-agent-core's Agent with
// pi-ai's scripted (faux) model. The model's turns are factories that read
// the earlier tool results (the page's refs, the rows on the page) to decide
// the next call, as a real model would; the contacts are random per run.

/** The text of the latest tool result in the model's context. */
function lastToolText(context: Context): string {
  const result = lastToolResult(context);
  if (result.isError) throw new Error(`the tool failed: ${result.text}`);
  return result.text;
}

async function replay(provider: SandboxProvider, dataDir: string) {
  const contacts = randomContacts();
  const port = 8600 + Math.floor(Math.random() * 300);
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: `pi-${Date.now().toString(36)}`, botId: "pi" });
  const machine = await run.machine();
  await machine.files.write(`${run.workdir}/site/index.html`, new TextEncoder().encode(contactsPage(contacts)));
  await servePage(machine, run.workdir, "site", port);

  const faux = registerFauxProvider({ models: [{ id: "scripted-text", input: ["text"] }] });
  faux.setResponses([
    () => fauxAssistantMessage(fauxToolCall("browser_navigate", { url: `http://127.0.0.1:${port}/` })),
    (context) => {
      const ref = /(e\d+) button (?:"Show contacts"|Show contacts\])/.exec(lastToolText(context))?.[1];
      if (!ref) throw new Error("no Show contacts button in the snapshot");
      return fauxAssistantMessage(fauxToolCall("browser_act", { ref, action: "click" }));
    },
    (context) => {
      const rows = contactsInText(lastToolText(context));
      return fauxAssistantMessage(fauxToolCall("write_file", { path: "contacts.csv", content: contactsCsv(rows) }));
    },
    () => fauxAssistantMessage(fauxToolCall("shell", { command: "tail -n +2 contacts.csv | wc -l" })),
    (context) => {
      const count = lastToolText(context).match(/stdout:\n\s*(\d+)/)?.[1];
      return fauxAssistantMessage(fauxText(`Saved ${count} contacts to contacts.csv.`));
    },
  ]);
  const activity: ActivityEvent[] = [];
  try {
    const agent = createComputerAgent({
      run,
      capabilities: runtime.capabilities,
      model: faux.getModel(),
      onActivity: (e) => activity.push(e),
    });
    await agent.prompt("Export the contacts of http://127.0.0.1 to contacts.csv.");
    const csv = new TextDecoder().decode(await machine.files.read(`${run.workdir}/contacts.csv`));
    const last = agent.state.messages.at(-1);
    return { contacts, csv, activity, last, pending: faux.getPendingResponseCount() };
  } finally {
    faux.unregister();
    await endAndRemove(runtime, run, provider);
  }
}

function expectExported(result: Awaited<ReturnType<typeof replay>>) {
  expect(result.pending).toBe(0);
  expect(result.csv).toBe(contactsCsv(result.contacts));
  expect(result.activity.map((e) => [e.tool, e.ok])).toEqual([
    ["browser_navigate", true],
    ["browser_act", true],
    ["write_file", true],
    ["shell", true],
  ]);
  expect(result.activity[2]?.summary).toBe(`wrote contacts.csv (${Buffer.byteLength(result.csv)} bytes)`);
  expect(JSON.stringify(result.last)).toContain(`Saved ${result.contacts.length} contacts`);
}

describe("Pi agent replay on the fake provider", () => {
  it("exports this run's random contacts through the page, file and shell tools", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "pi-replay-"));
    expectExported(await replay(createFakeProvider(), dataDir));
  }, 60_000);
});

const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "Pi agent replay on Docker",
);
if (!env.missing) {
  describe("Pi agent replay on Docker", () => {
    it("exports this run's random contacts in the computer's real Chromium", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "pi-replay-docker-"));
      expectExported(await replay(dockerProvider({ docker: env.docker, image: env.image, dataDir }), dataDir));
    }, 180_000);
  });
}
