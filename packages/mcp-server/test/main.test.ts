import { spawnSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { startMcpServer } from "../src/start-mcp-server.js";
import { exercise, protocolError } from "./mcp-checks.js";

// The bin as built (`dist/main.js`, what `npx @agent-computer/mcp-server` runs): build the package first.
const bin = join(dirname(fileURLToPath(import.meta.url)), "../dist/main.js");
const env = (extra: Record<string, string>) => {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^(SANDBOX_PROVIDER|E2B_|DAYTONA_|BOX_|BOAT_|NOVITA_|KUBERNETES_SANDBOX_|MCP_)/.test(key),
    ),
  ) as Record<string, string>;
  return { ...base, ...extra };
};

describe("the agent-computer-mcp bin", () => {
  it("serves the SDK's Client over stdio on SANDBOX_PROVIDER=fake, and says which provider on stderr", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "mcp-bin-"));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin],
      env: env({ SANDBOX_PROVIDER: "fake", AGENT_COMPUTER_DATA_DIR: dataDir }),
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: "bin-test", version: "0.0.0" });
    await client.connect(transport);
    try {
      await exercise(client);
      expect((await protocolError(client.callTool({ name: "nope", arguments: {} }))).code).toBe(-32602);
      expect(stderr).toContain("provider: fake (SANDBOX_PROVIDER=fake)");
    } finally {
      await client.close();
    }
  }, 60_000);

  it.each([
    [{ SANDBOX_PROVIDER: "e2b" }, /INVALID_ARGUMENT: SANDBOX_PROVIDER=e2b needs E2B_API_KEY/],
    [{ SANDBOX_PROVIDER: "e2b", E2B_API_KEY: "k" }, /needs E2B_TEMPLATE/],
    [{ SANDBOX_PROVIDER: "daytona" }, /needs DAYTONA_API_KEY/],
    [{ SANDBOX_PROVIDER: "novita", NOVITA_API_KEY: "k" }, /needs NOVITA_TEMPLATE/],
    [{ SANDBOX_PROVIDER: "boat" }, /needs BOAT_API_KEY/],
    [{ SANDBOX_PROVIDER: "kubernetes" }, /needs KUBERNETES_SANDBOX_NAMESPACE/],
    [
      { SANDBOX_PROVIDER: "nowhere" },
      /"nowhere" is not a provider: use one of docker, kubernetes, e2b, novita, daytona, boat, box, boxd, createos, railway, host, fake/,
    ],
    [
      { SANDBOX_PROVIDER: "fake", MCP_HTTP_PORT: "0" },
      /needs a bearer token of at least 32 characters \(MCP_AUTH_TOKEN\)/,
    ],
    [
      { SANDBOX_PROVIDER: "fake", MCP_HTTP_PORT: "0", MCP_AUTH_TOKEN: "t".repeat(32), MCP_MAX_SESSIONS: "0" },
      /MCP_MAX_SESSIONS must be a positive whole number, got "0"/,
    ],
    [
      { SANDBOX_PROVIDER: "fake", MCP_HTTP_PORT: "0", MCP_AUTH_TOKEN: "t".repeat(32), MCP_SESSION_IDLE_MS: "1h" },
      /MCP_SESSION_IDLE_MS must be a positive whole number, got "1h"/,
    ],
  ])("refuses to start with %o: one typed error naming what is missing, exit 1", (extra, message) => {
    const result = spawnSync(process.execPath, [bin], { env: env(extra), encoding: "utf8", timeout: 30_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^agent-computer-mcp cannot start: /);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe("");
  });

  it("admits the Host and browser Origin that MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS name, and no other", async () => {
    const lines: string[] = [];
    const started = await startMcpServer({
      env: {
        SANDBOX_PROVIDER: "fake",
        AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-http-env-")),
        MCP_HTTP_PORT: "0",
        MCP_AUTH_TOKEN: "t".repeat(32),
        MCP_ALLOWED_HOSTS: "mcp.example, 127.0.0.1",
        MCP_ALLOWED_ORIGINS: "https://app.example",
      },
      log: (line) => lines.push(line),
      stdio: () => {
        throw new Error("HTTP was asked for");
      },
    });
    try {
      const url = /at (http:\/\/\S+)/.exec(lines.join("\n"))?.[1] as string;
      const status = (headers: Record<string, string>) =>
        new Promise<number>((resolve, reject) => {
          const req = request(url, { method: "POST", headers }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on("error", reject);
          req.end("{}");
        });
      // Admitted as far as the token: 401, not 403.
      expect(await status({ host: "mcp.example", origin: "https://app.example" })).toBe(401);
      expect(await status({})).toBe(401);
      expect(await status({ host: "localhost" })).toBe(403);
      expect(await status({ origin: `http://${new URL(url).host}` })).toBe(403);
    } finally {
      await started.stop();
    }
  });

  it("never echoes a key it was given in its errors", () => {
    const secret = "sk-should-never-appear-4242";
    const result = spawnSync(process.execPath, [bin], {
      env: env({ SANDBOX_PROVIDER: "e2b", E2B_API_KEY: secret }),
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr + result.stdout).not.toContain(secret);
  });

  it("prints its usage with --help: every provider and its variables", () => {
    const result = spawnSync(process.execPath, [bin, "--help"], { encoding: "utf8", timeout: 30_000 });
    expect(result.status).toBe(0);
    for (const name of [
      "docker",
      "kubernetes",
      "e2b",
      "daytona",
      "boat",
      "box",
      "fake",
      "MCP_AUTH_TOKEN",
      "E2B_API_KEY",
    ])
      expect(result.stdout).toContain(name);
  });
});
