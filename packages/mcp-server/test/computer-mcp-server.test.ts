import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createComputerMcpServer } from "../src/computer-mcp-server.js";
import { fakeComputer } from "./fake-computer.js";
import { exercise, objectNodes, protocolError } from "./mcp-checks.js";

async function connected() {
  const { runtime, run } = await fakeComputer();
  const { server } = createComputerMcpServer({ run, capabilities: runtime.capabilities, runtime });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "0.0.0" });
  await client.connect(clientSide);
  return { runtime, run, client };
}

describe("createComputerMcpServer", () => {
  it("answers tools/list and tools/call through the SDK's own Client: text, images, isError", async () => {
    const { run, client } = await connected();
    try {
      await exercise(client);
      const machine = await run.machine();
      expect(new TextDecoder().decode(await machine.files.read(`${run.workdir}/hello.txt`))).toBe("hello mcp");
    } finally {
      await client.close();
      await run.end("completed");
    }
  });

  it("answers an unknown tool and malformed params with -32602 protocol errors a person can read", async () => {
    const { run, client } = await connected();
    try {
      const unknown = await protocolError(client.callTool({ name: "no_such_tool", arguments: {} }));
      expect(unknown).toBeInstanceOf(McpError);
      expect(unknown.code).toBe(-32602);
      expect(unknown.message).toMatch(/Unknown tool: "no_such_tool"\. This server offers shell, /);
      // One "MCP error -32602:" prefix, the client's own, not the server's doubled (issue 47).
      expect(unknown.message.match(/MCP error/g)).toHaveLength(1);

      const arrayArgs = await protocolError(
        client.request({ method: "tools/call", params: { name: "shell", arguments: ["ls"] } }, {} as never),
      );
      expect(arrayArgs.code).toBe(-32602);
      expect(arrayArgs.message).toContain(
        "params.arguments must be an object of the tool's named arguments, got an array",
      );
      expect(arrayArgs.message).not.toMatch(/"code":|invalid_type|expected/);

      const noName = await protocolError(
        client.request({ method: "tools/call", params: { arguments: {} } }, {} as never),
      );
      expect(noName.code).toBe(-32602);
      expect(noName.message).toContain("tools/call needs params.name");
      expect(noName.message).toMatch(/^MCP error -32602: tools\/call needs params\.name/);

      // Arguments the tool refuses are a tool error the model reads and can correct (MCP 2025-11-25).
      const extra = await client.callTool({ name: "shell", arguments: { command: "true", cwd: "/" } });
      expect(extra.isError).toBe(true);
      expect(JSON.stringify(extra.content)).toContain('Unrecognized key: \\"cwd\\"');
    } finally {
      await client.close();
      await run.end("completed");
    }
  });

  it("lists closed input schemas: additionalProperties false at every object of every tool", async () => {
    const { run, client } = await connected();
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThanOrEqual(13);
      const open = tools.flatMap((tool) =>
        objectNodes(tool.inputSchema)
          .filter(({ node }) => node.additionalProperties !== false)
          .map(({ at }) => `${tool.name} ${at}`),
      );
      expect(open).toEqual([]);
    } finally {
      await client.close();
      await run.end("completed");
    }
  });

  it("tells the client when a person takes or releases the screen, and the tool list follows", async () => {
    const { runtime, run, client } = await connected();
    try {
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
      // A hidden tool is unknown while hidden.
      const hidden = await protocolError(client.callTool({ name: "computer_act", arguments: { actions: [] } }));
      expect(hidden.code).toBe(-32602);
      await runtime.releaseTakeover(control);
      await expect.poll(() => notified).toBe(2);
      expect(await names()).toContain("computer_act");
      run.state = "active";
    } finally {
      await client.close();
      await run.end("completed");
    }
  });
});
