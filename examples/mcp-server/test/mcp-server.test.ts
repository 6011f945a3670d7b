import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createComputerMcpServer } from "../src/computer-mcp-server.js";
import { serveMcpHttp } from "../src/http.js";

const here = dirname(fileURLToPath(import.meta.url));

type Content = { type: string; text?: string; data?: string; mimeType?: string }[];

/** What every transport must answer: tools/list, a shell call, a computer_observe call with an image. */
async function exercise(client: Client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(["shell", "write_file", "computer_observe", "computer_act"]));
  expect(tools.find((t) => t.name === "shell")?.inputSchema).toMatchObject({
    type: "object",
    required: ["command"],
  });

  await client.callTool({ name: "write_file", arguments: { path: "hello.txt", content: "hello mcp" } });
  const shell = await client.callTool({ name: "shell", arguments: { command: "cat hello.txt" } });
  expect(shell.isError).toBeFalsy();
  expect((shell.content as Content)[0]).toMatchObject({ type: "text", text: expect.stringContaining("hello mcp") });

  const observed = await client.callTool({ name: "computer_observe", arguments: {} });
  const image = (observed.content as Content).find((c) => c.type === "image");
  expect(image?.mimeType).toMatch(/^image\/(png|jpeg)$/);
  expect(Buffer.from(image?.data ?? "", "base64").byteLength).toBeGreaterThan(0);

  const bad = await client.callTool({ name: "read_file", arguments: { path: "/etc/passwd" } });
  expect(bad.isError).toBe(true);
  const missing = await client.callTool({ name: "no_such_tool", arguments: {} });
  expect(missing.isError).toBe(true);
}

async function connect(transport: Transport) {
  const client = new Client({ name: "test", version: "0.0.0" });
  await client.connect(transport);
  return client;
}

describe("MCP server example", () => {
  it("answers tools/list, shell and computer_observe (image content) over the in-memory transport", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mcp-example-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "mcp", botId: "alpha" });
    const { server } = createComputerMcpServer({ run, capabilities: runtime.capabilities, runtime });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = await connect(clientSide);
    try {
      await exercise(client);
      const machine = await run.machine();
      expect(new TextDecoder().decode(await machine.files.read(`${run.workdir}/hello.txt`))).toBe("hello mcp");

      // A person takes the screen: the client is told, and the screen-changing tools are gone.
      let notified = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        notified++;
      });
      const names = async () => (await client.listTools()).tools.map((t) => t.name);
      expect(await names()).toContain("computer_act");
      run.state = "waiting_takeover";
      const control = await runtime.takeover({
        computerId: run.computerId,
        botId: "alpha",
        holder: "p",
        ttlMs: 10_000,
      });
      await expect.poll(() => notified).toBe(1);
      expect(await names()).not.toContain("computer_act");
      expect(await names()).toContain("computer_observe");
      await runtime.releaseTakeover(control);
      await expect.poll(() => notified).toBe(2);
      expect(await names()).toContain("computer_act");
      run.state = "active";
    } finally {
      await client.close();
      await run.end("completed");
    }
  });

  it("answers the same over streamable HTTP", async () => {
    const runtime = createComputerRuntime({
      provider: createFakeProvider(),
      stateStore: new MemoryStateStore(),
      homeStore: new LocalAgentHomeStore({ dataDir: await mkdtemp(join(tmpdir(), "mcp-http-")) }),
      idleMs: 0,
    });
    const run = runtime.startRun({ workspaceId: "mcp", botId: "alpha" });
    const http = await serveMcpHttp({ run, capabilities: runtime.capabilities });
    const client = await connect(new StreamableHTTPClientTransport(new URL(http.url)));
    try {
      await exercise(client);
    } finally {
      await client.close();
      await http.close();
      await run.end("completed");
    }
  });

  it("answers the same over stdio, as a separate process", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "mcp-stdio-"));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", join(here, "../src/main.ts")],
      env: { ...(process.env as Record<string, string>), AGENT_COMPUTER_DATA_DIR: dataDir },
      stderr: "pipe",
    });
    const client = await connect(transport);
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
  }, 60_000);
});
