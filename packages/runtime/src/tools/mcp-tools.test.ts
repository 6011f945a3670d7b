import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import { createComputerRuntime } from "../runtime/computer-runtime.js";
import { ComputerToolSession } from "./computer-tool-session.js";
import { computerTools } from "./computer-tools.js";
import { toMcpTools } from "./mcp-tools.js";

async function setup() {
  const runtime = createComputerRuntime({
    provider: createFakeProvider(),
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mcp-tools-")) }),
    idleMs: 0,
  });
  const run = runtime.startRun({ workspaceId: "tools", botId: "alpha" });
  const session = new ComputerToolSession({ run, capabilities: runtime.capabilities, vision: true });
  const tools = toMcpTools(computerTools(session), session);
  const tool = (name: string) => {
    const found = tools.find((t) => t.name === name);
    if (!found) throw new Error(`no tool ${name}`);
    return found;
  };
  return { tools, tool };
}

describe("toMcpTools", () => {
  it("lists each tool with an object input schema", async () => {
    const { tools, tool } = await setup();
    expect(tools.map((t) => t.name)).toContain("computer_observe");
    for (const t of tools) expect(t.inputSchema.type).toBe("object");
    expect(tool("shell").inputSchema).toMatchObject({ required: ["command"] });
  });

  it("titles each tool and hints whether it changes anything: read-only tools are not destructive", async () => {
    const { tools, tool } = await setup();
    expect(tool("computer_observe")).toMatchObject({
      title: "Computer observe",
      annotations: { title: "Computer observe", readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    });
    expect(tool("shell").annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
    });
    for (const t of tools) {
      expect(t.title).toMatch(/^[A-Z][a-z0-9 ]+$/);
      expect(t.annotations.openWorldHint).toBe(true);
      expect(t.annotations.readOnlyHint).toBe(!t.annotations.destructiveHint);
    }
    // Both kinds are in the set.
    expect(new Set(tools.map((t) => t.annotations.readOnlyHint))).toEqual(new Set([true, false]));
  });

  it("answers calls as CallToolResult: text, base64 images, embedded files, and isError", async () => {
    const { tool } = await setup();
    expect(await tool("write_file").call({ path: "a.txt", content: "hello" })).not.toHaveProperty("isError");
    const shell = await tool("shell").call({ command: "cat a.txt" });
    expect(shell.content).toEqual([{ type: "text", text: expect.stringContaining("hello") }]);

    const observed = await tool("computer_observe").call(undefined);
    const image = observed.content.find((c) => c.type === "image");
    expect(image).toMatchObject({ mimeType: expect.stringMatching(/^image\/(png|jpeg)$/) });
    expect(Buffer.from((image as { data: string }).data, "base64").byteLength).toBeGreaterThan(0);

    const attached = await tool("attach_file").call({ path: "a.txt" });
    expect(attached.content[1]).toEqual({
      type: "resource",
      resource: {
        uri: "attachment:///a.txt",
        mimeType: expect.any(String),
        blob: Buffer.from("hello").toString("base64"),
      },
    });

    const bad = await tool("read_file").call({ path: "/etc/passwd" });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^INVALID_ARGUMENT: /) });
    // The same failure as data, for programs: its code, message and whether a retry may help.
    expect(bad.structuredContent).toEqual({
      error: { code: "INVALID_ARGUMENT", message: expect.stringContaining("/etc/passwd"), retryable: false },
    });
    expect(shell).not.toHaveProperty("structuredContent");
  });

  it("marks a failed or timed-out shell command as an error only where the session asks", async () => {
    const plain = await setup();
    const failed = await plain.tool("shell").call({ command: "exit 3" });
    expect(failed).not.toHaveProperty("isError");
    expect(failed.content[0]).toMatchObject({ text: expect.stringMatching(/^exit code 3/) });

    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mcp-tools-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "strict", botId: "alpha" });
    const session = new ComputerToolSession({
      run,
      capabilities: runtime.capabilities,
      vision: false,
      failedCommandIsError: true,
    });
    const shell = toMcpTools(computerTools(session), session).find((t) => t.name === "shell")!;
    const exited = await shell.call({ command: "echo partial; exit 3" });
    expect(exited.isError).toBe(true);
    expect(exited.content[0]).toMatchObject({ text: expect.stringContaining("partial") });
    expect(exited.structuredContent).toEqual({
      error: { code: "COMMAND_FAILED", message: "The command exited with exit code 3.", retryable: false },
    });
    const slow = await shell.call({ command: "sleep 5", timeoutSeconds: 1 });
    expect(slow.isError).toBe(true);
    expect(slow.structuredContent).toMatchObject({ error: { code: "TIMEOUT", retryable: true } });
    expect(await shell.call({ command: "true" })).not.toHaveProperty("isError");
    await run.end("completed");
  });
});
