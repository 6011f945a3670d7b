// Runtime's README example, as an ESM app writes it: a runtime over the fake
// provider, one bot's run, its shell command and a file (directly and through
// the tools a model calls), the run's end saving the home.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AgentComputerError,
  ComputerToolSession,
  callTool,
  computerTools,
  createComputerRuntime,
  LocalAgentHomeStore,
  MemoryStateStore,
  textOf,
} from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";

const dataDir = await mkdtemp(join(tmpdir(), "consumer-runtime-esm-"));
const events: string[] = [];
const runtime = createComputerRuntime({
  provider: createFakeProvider({ root: join(dataDir, "machines") }),
  stateStore: new MemoryStateStore(),
  homeStore: new LocalAgentHomeStore({ dataDir }),
  onEvent: (e) => events.push(e.type),
});

const run = runtime.startRun({ workspaceId: "acme", botId: "alpha" });
const machine = await run.machine();
const result = await machine.exec({ shell: "echo hi > notes.txt && cat notes.txt", cwd: run.workdir });
assert.equal(result.exitCode, 0);
assert.equal(new TextDecoder().decode(result.stdout), "hi\n");

const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: false });
const tools = computerTools(session);
const tool = (name: string) => {
  const found = tools.find((t) => t.name === name);
  assert.ok(found, `the ${name} tool is offered`);
  return found;
};
const shell = await callTool(tool("shell"), { command: "cat notes.txt" }, session);
assert.ok(!shell.isError, textOf(shell));
assert.match(textOf(shell), /hi/);
await callTool(tool("write_file"), { path: "plan.md", content: "# Plan\n" }, session);
const read = await callTool(tool("read_file"), { path: "plan.md" }, session);
assert.match(textOf(read), /# Plan/);
const outside = await callTool(tool("read_file"), { path: "../../../etc/passwd" }, session);
assert.equal(outside.isError, true, "a path out of the home is refused");

try {
  await machine.files.read("../outside");
  assert.fail("a path out of the home is refused");
} catch (error) {
  assert.ok(AgentComputerError.is(error, "INVALID_ARGUMENT"), String(error));
}

await run.end("completed");
const record = await runtime.leases.getComputer(runtime.computerIdFor({ workspaceId: "acme", botId: "alpha" }));
assert.equal(record?.revision, 1, "the run's end saved the home");
assert.ok(events.includes("ready") && events.includes("checkpointing"), `events: ${events.join(", ")}`);
await rm(dataDir, { recursive: true, force: true });
console.log(`runtime example (ESM): shell, files and tools on the fake provider; events ${events.join(", ")}`);
