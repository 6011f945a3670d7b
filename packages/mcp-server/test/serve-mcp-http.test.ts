import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { serveMcpHttp } from "../src/serve-mcp-http.js";
import { fakeComputer } from "./fake-computer.js";
import { type Content, exercise, protocolError } from "./mcp-checks.js";

const token = randomBytes(32).toString("hex");

async function served() {
  const { runtime, run } = await fakeComputer();
  const http = await serveMcpHttp({ run, runtime, capabilities: runtime.capabilities, token });
  const clients: Client[] = [];
  const connect = async (bearer: string | null = token) => {
    const client = new Client({ name: `test-${clients.length}`, version: "0.0.0" });
    const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers } }));
    clients.push(client);
    return client;
  };
  const close = async () => {
    for (const client of clients) await client.close();
    await http.close();
    await run.end("completed");
  };
  return { http, connect, close };
}

describe("serveMcpHttp", () => {
  it("answers the SDK's Client over streamable HTTP with the bearer token", async () => {
    const { connect, close, http } = await served();
    try {
      await exercise(await connect());
      expect(http.sessions()).toBe(1);
    } finally {
      await close();
    }
  });

  it("refuses a request without the token, or with a wrong one, with 401 before any MCP", async () => {
    const { connect, close, http } = await served();
    try {
      await expect(connect(null)).rejects.toMatchObject({
        code: 401,
        message: expect.stringContaining("bearer token"),
      });
      await expect(connect(`${token.slice(0, -1)}${token.endsWith("0") ? "1" : "0"}`)).rejects.toMatchObject({
        code: 401,
      });
      const raw = await fetch(http.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Basic ${token}` },
        body: "{}",
      });
      expect(raw.status).toBe(401);
      expect(raw.headers.get("www-authenticate")).toMatch(/^Bearer /);
      // With the token: a session id it never gave is 404, a request outside a session 400.
      const post = (headers: Record<string, string>) =>
        fetch(http.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${token}`,
            ...headers,
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        });
      expect((await post({ "mcp-session-id": "never-given" })).status).toBe(404);
      expect((await post({})).status).toBe(400);
      expect(http.sessions()).toBe(0);
    } finally {
      await close();
    }
  });

  it("refuses to start without a token of at least 32 characters", async () => {
    const { runtime, run } = await fakeComputer();
    await expect(serveMcpHttp({ run, capabilities: runtime.capabilities, token: "short" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("at least 32 characters"),
    });
    await expect(serveMcpHttp({ run, capabilities: runtime.capabilities, token: "" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    await run.end("completed");
  });

  it("gives each client its own frame de-duplication: a client that never saw the screen gets the image", async () => {
    const { connect, close } = await served();
    try {
      const first = await connect();
      const second = await connect();
      const images = async (client: Client) =>
        ((await client.callTool({ name: "computer_observe", arguments: {} })).content as Content).filter(
          (c) => c.type === "image",
        ).length;
      expect(await images(first)).toBe(1);
      // The same client is told its last screenshot still holds ...
      const again = await first.callTool({ name: "computer_observe", arguments: {} });
      expect(JSON.stringify(again.content)).toContain("Unchanged since your last screenshot");
      // ... another client, which never saw it, gets it.
      expect(await images(second)).toBe(1);
    } finally {
      await close();
    }
  });

  it("answers unknown tools and malformed params over HTTP with -32602 and a readable message", async () => {
    const { connect, close } = await served();
    try {
      const client = await connect();
      const unknown = await protocolError(client.callTool({ name: "nope", arguments: {} }));
      expect(unknown.code).toBe(-32602);
      expect(unknown.message).toContain('Unknown tool: "nope"');
      const bad = await protocolError(
        client.request({ method: "tools/call", params: { name: "shell", arguments: "ls" } }, {} as never),
      );
      expect(bad.code).toBe(-32602);
      expect(bad.message).toContain("params.arguments must be an object of the tool's named arguments, got string");
    } finally {
      await close();
    }
  });
});
