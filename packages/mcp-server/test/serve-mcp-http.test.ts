import { randomBytes } from "node:crypto";
import { type ClientRequest, createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { type ServeMcpHttpOptions, serveMcpHttp } from "../src/serve-mcp-http.js";
import { fakeComputer } from "./fake-computer.js";
import { type Content, exercise, protocolError } from "./mcp-checks.js";

const token = randomBytes(32).toString("hex");

async function served(extra: Partial<ServeMcpHttpOptions> = {}) {
  const { runtime, run } = await fakeComputer();
  const http = await serveMcpHttp({ run, runtime, capabilities: runtime.capabilities, token, ...extra });
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

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request as any client could send it, `Host` included (fetch sets its own). */
function raw(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown }) {
  return new Promise<RawAnswer>((resolve, reject) => {
    const req = request(url, { method: init.method ?? "POST", headers: init.headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(init.body === undefined ? undefined : JSON.stringify(init.body));
  });
}

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0.0.0" } },
};

/** A raw `initialize` with the token unless `headers` says otherwise; the session id it opened, if any. */
async function initialize(url: string, headers: Record<string, string> = {}) {
  const answer = await raw(url, {
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, ...headers },
    body: INITIALIZE,
  });
  return { ...answer, session: answer.headers["mcp-session-id"] as string | undefined };
}

const listTools = (url: string, session: string) =>
  raw(url, {
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-session-id": session },
    body: { jsonrpc: "2.0", id: 2, method: "tools/list" },
  });

/** A session's GET stream, held open until the returned request is destroyed. */
function openStream(url: string, session: string): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "GET",
        headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, "mcp-session-id": session },
      },
      (res) => (res.statusCode === 200 ? resolve(req) : reject(new Error(`GET stream: ${res.statusCode}`))),
    );
    req.on("error", () => undefined);
    req.end();
  });
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

  it("tells a missing token from a wrong one: a bare challenge, or invalid_token", async () => {
    const { close, http } = await served();
    try {
      const missing = await initialize(http.url, { authorization: "" });
      expect(missing.status).toBe(401);
      expect(missing.headers["www-authenticate"]).toBe('Bearer realm="agent-computer-mcp"');
      expect(missing.body).toContain("A bearer token is required");
      const wrong = await initialize(http.url, { authorization: `Bearer ${"f".repeat(64)}` });
      expect(wrong.status).toBe(401);
      expect(wrong.headers["www-authenticate"]).toBe('Bearer realm="agent-computer-mcp", error="invalid_token"');
      expect(wrong.body).toContain("not this server's MCP_AUTH_TOKEN");
      expect(http.sessions()).toBe(0);
    } finally {
      await close();
    }
  });

  it("answers 403 to a Host or browser Origin it does not allow, before the token; no Origin is a client, not a page", async () => {
    const { close, http } = await served();
    const port = new URL(http.url).port;
    try {
      // A page rebound to 127.0.0.1 sends its own name and origin.
      const refusedHeaders: Record<string, string>[] = [
        { origin: "http://evil.example" },
        { origin: "http://evil.example", authorization: "" },
        { host: `evil.example:${port}` },
        { origin: "null" },
        { origin: `http://127.0.0.1:${Number(port) + 1}` },
      ];
      for (const headers of refusedHeaders) {
        const refused = await initialize(http.url, headers);
        expect(refused.status, JSON.stringify(headers)).toBe(403);
        expect(JSON.parse(refused.body).error.message).toMatch(/^(Host|Origin) /);
      }
      expect(http.sessions()).toBe(0);
      // The server's own page, the loopback names, and a client that sends no Origin.
      const admittedHeaders: Record<string, string>[] = [
        { origin: `http://127.0.0.1:${port}` },
        { origin: `http://localhost:${port}`, host: `localhost:${port}` },
        {},
      ];
      for (const headers of admittedHeaders) {
        expect((await initialize(http.url, headers)).status, JSON.stringify(headers)).toBe(200);
      }
      expect(http.sessions()).toBe(3);
    } finally {
      await close();
    }
    const named = await served({ allowedHosts: ["mcp.example"], allowedOrigins: ["https://app.example"] });
    try {
      const ok = await initialize(named.http.url, { host: "mcp.example", origin: "https://app.example" });
      expect(ok.status).toBe(200);
      expect((await initialize(named.http.url, {})).status).toBe(403);
      expect((await initialize(named.http.url, { host: "mcp.example", origin: "http://app.example" })).status).toBe(
        403,
      );
    } finally {
      await named.close();
    }
  });

  it("reads allowed hosts in any spelling, and refuses to start on a host, origin or limit that admits nothing", async () => {
    const { runtime, run } = await fakeComputer();
    const base = { run, capabilities: runtime.capabilities, token };
    for (const [extra, message] of [
      [{ allowedOrigins: ["app.example"] }, /"app.example" is not an origin like https:\/\/app.example/],
      [{ allowedHosts: ["mcp.example/path"] }, /"mcp.example\/path" is not a host name/],
      [{ maxSessions: 0 }, /maxSessions must be a positive whole number, got 0/],
      [{ sessionIdleMs: 1.5 }, /sessionIdleMs must be a positive whole number, got 1.5/],
    ] as const) {
      await expect(serveMcpHttp({ ...base, ...extra }), JSON.stringify(extra)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(message),
      });
    }
    await run.end("completed");
    const spelled = await served({ allowedHosts: ["MCP.Example:8080"], allowedOrigins: ["HTTPS://App.Example:443"] });
    try {
      const ok = await initialize(spelled.http.url, { host: "mcp.example", origin: "https://app.example" });
      expect(ok.status).toBe(200);
    } finally {
      await spelled.close();
    }
  });

  it("keeps at most maxSessions: the longest-idle gives way, busy ones stay, and all busy is 503", async () => {
    const { close, http } = await served({ maxSessions: 2 });
    const streams: ClientRequest[] = [];
    try {
      const first = await initialize(http.url);
      const second = await initialize(http.url);
      expect(http.sessions()).toBe(2);
      expect((await listTools(http.url, first.session as string)).status).toBe(200);
      // The first was used last: the second is the longest idle and gives way.
      const third = await initialize(http.url);
      expect(third.status).toBe(200);
      expect(http.sessions()).toBe(2);
      expect((await listTools(http.url, second.session as string)).status).toBe(404);
      expect((await listTools(http.url, first.session as string)).status).toBe(200);
      // Both open sessions hold a GET stream: nobody is idle, so a new client is refused.
      streams.push(await openStream(http.url, first.session as string));
      streams.push(await openStream(http.url, third.session as string));
      const refused = await initialize(http.url);
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body).error.message).toContain("request in flight");
      expect(http.sessions()).toBe(2);
      // A stream ends: its session is idle again and gives way.
      streams.shift()?.destroy();
      await expect.poll(async () => (await initialize(http.url)).status).toBe(200);
      expect((await listTools(http.url, first.session as string)).status).toBe(404);
      expect((await listTools(http.url, third.session as string)).status).toBe(200);
    } finally {
      for (const stream of streams) stream.destroy();
      await close();
    }
  });

  it("holds 64 sessions by default however many times clients initialize without closing", async () => {
    const { close, http } = await served();
    try {
      const answers = [];
      for (let i = 0; i < 100; i++) answers.push((await initialize(http.url)).status);
      expect(answers.every((status) => status === 200)).toBe(true);
      expect(http.sessions()).toBe(64);
    } finally {
      await close();
    }
  });

  it("closes a session idle for sessionIdleMs, and keeps one whose stream is open", async () => {
    const { close, http } = await served({ sessionIdleMs: 200 });
    let stream: ClientRequest | undefined;
    try {
      const idle = await initialize(http.url);
      const busy = await initialize(http.url);
      stream = await openStream(http.url, busy.session as string);
      await expect.poll(() => http.sessions()).toBe(1);
      expect((await listTools(http.url, idle.session as string)).status).toBe(404);
      await new Promise((r) => setTimeout(r, 500));
      expect((await listTools(http.url, busy.session as string)).status).toBe(200);
      stream.destroy();
      await expect.poll(() => http.sessions()).toBe(0);
    } finally {
      stream?.destroy();
      await close();
    }
  });

  it("refuses a port in use with CONFLICT in a sentence, not an unhandled error", async () => {
    const { runtime, run } = await fakeComputer();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      await expect(
        serveMcpHttp({ run, capabilities: runtime.capabilities, token: "t".repeat(40), port }),
      ).rejects.toMatchObject({
        code: "CONFLICT",
        message: `Cannot listen on 127.0.0.1:${port}: the port is in use; set MCP_HTTP_PORT to a free one.`,
      });
    } finally {
      taken.close();
      await run.end("completed");
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
