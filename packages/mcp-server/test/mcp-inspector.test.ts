import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { reportMissingProvider } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";
import { startMcpServer } from "../src/start-mcp-server.js";

// Issue 47: a client this project did not write, the MCP Inspector's CLI
// (@modelcontextprotocol/inspector, pinned in test/mcp-clients, outside the
// workspace: `npm ci --prefix test/mcp-clients`), against the bin as built
// over stdio and against the HTTP server: every tool carries its title and
// hints, a refused call's error has one code prefix and readable text, and
// a web page's Origin the server does not admit gets 403.
const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const inspector = join(root, "test/mcp-clients/node_modules/.bin/mcp-inspector");
const bin = join(root, "packages/mcp-server/dist/main.js");
const TOKEN = "i".repeat(40);

type Answer = { status: number | null; json: Record<string, unknown> | undefined; stderr: string };

/** One Inspector CLI call (`--format json`): its exit status and the JSON it printed. */
function inspect(args: string[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const child = spawn(inspector, ["--cli", "--format", "json", ...args], {
      // No keychain or catalog of the person running the tests.
      env: { ...process.env, HOME: tmpdir(), MCP_CATALOG_PATH: join(tmpdir(), `inspector-${process.pid}.json`) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      // A result is printed on stdout, a failure on stderr, each as one JSON line.
      resolve({ status, json: lastJsonLine(stdout) ?? lastJsonLine(stderr), stderr });
    });
  });
}

function lastJsonLine(text: string): Record<string, unknown> | undefined {
  for (const line of text.trim().split("\n").reverse()) {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {}
  }
  return undefined;
}

type Tool = { name: string; title?: string; annotations?: Record<string, unknown> };

function expectEveryToolAnnotated(answer: Answer) {
  const tools = (answer.json?.result as { tools?: Tool[] } | undefined)?.tools ?? [];
  expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["shell", "read_file", "computer_observe"]));
  for (const tool of tools) {
    expect(tool.title, tool.name).toEqual(expect.any(String));
    expect(tool.annotations, tool.name).toMatchObject({
      readOnlyHint: expect.any(Boolean),
      destructiveHint: expect.any(Boolean),
      idempotentHint: expect.any(Boolean),
      openWorldHint: expect.any(Boolean),
    });
  }
  expect(tools.find((t) => t.name === "read_file")?.annotations?.readOnlyHint).toBe(true);
  expect(tools.find((t) => t.name === "shell")?.annotations?.destructiveHint).toBe(true);
}

const missing = existsSync(inspector)
  ? existsSync(bin)
    ? undefined
    : `no ${bin}: build the package first`
  : "no MCP Inspector: run npm ci --prefix test/mcp-clients";
if (missing) reportMissingProvider("the MCP Inspector CLI against the server", { kind: "mcp-inspector", missing });
else {
  describe("the MCP Inspector CLI against the server", () => {
    it("over stdio: every tool titled and hinted, a call answered, a refused call's error with one prefix", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "mcp-inspector-"));
      // The Inspector starts the server with its own short environment: TMPDIR passed on keeps the fake
      // provider's machines in the run's temporary folder (test/support/run-temporary-folder.ts).
      const server = [
        "-e",
        "SANDBOX_PROVIDER=fake",
        "-e",
        `AGENT_COMPUTER_DATA_DIR=${dataDir}`,
        "-e",
        `TMPDIR=${tmpdir()}`,
      ];
      const target = ["--", process.execPath, bin];

      const listed = await inspect([...server, "--method", "tools/list", ...target]);
      expect(listed.status, listed.stderr).toBe(0);
      expectEveryToolAnnotated(listed);

      const ran = await inspect([
        ...server,
        ...["--method", "tools/call", "--tool-name", "shell", "--tool-arg", "command=echo inspected"],
        ...target,
      ]);
      expect(ran.status, ran.stderr).toBe(0);
      expect(JSON.stringify(ran.json?.result)).toContain("inspected");

      const refused = await inspect([
        ...server,
        ...["--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=/etc/passwd"],
        ...target,
      ]);
      const result = refused.json?.result as {
        isError?: boolean;
        content?: { text?: string }[];
        structuredContent?: { error?: { code?: string } };
      };
      expect(refused.status).not.toBe(0);
      expect(result.isError).toBe(true);
      const text = result.content?.[0]?.text ?? "";
      // One prefix, then words a person reads: no doubled "MCP error", no zod dump.
      expect(text).toMatch(/^INVALID_ARGUMENT: Invalid path "\/etc\/passwd": give a path relative to your folder/);
      expect(text.match(/INVALID_ARGUMENT|MCP error/g)).toHaveLength(1);
      expect(result.structuredContent?.error?.code).toBe("INVALID_ARGUMENT");
    }, 120_000);

    it("over HTTP: served with the token; a page's Origin it does not admit gets 403", async () => {
      const lines: string[] = [];
      const started = await startMcpServer({
        env: {
          SANDBOX_PROVIDER: "fake",
          AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-inspector-http-")),
          MCP_HTTP_PORT: "0",
          MCP_AUTH_TOKEN: TOKEN,
        },
        log: (line) => lines.push(line),
        stdio: () => {
          throw new Error("HTTP was asked for");
        },
      });
      try {
        const url = /at (http:\/\/\S+)/.exec(lines.join("\n"))?.[1] as string;
        const http = ["--transport", "http", "--server-url", url, "--method", "tools/list"];

        const listed = await inspect([...http, "--header", `Authorization: Bearer ${TOKEN}`]);
        expect(listed.status, listed.stderr).toBe(0);
        expectEveryToolAnnotated(listed);

        const rebound = await inspect([
          ...http,
          ...["--header", `Authorization: Bearer ${TOKEN}`, "Origin: https://evil.example"],
        ]);
        expect(rebound.status).not.toBe(0);
        const error = rebound.json?.error as { status?: number; message?: string } | undefined;
        expect(error?.status).toBe(403);
        expect(error?.message).toMatch(/Origin \\?"https:\/\/evil\.example\\?" may not use this MCP server/);
      } finally {
        await started.stop();
      }
    }, 120_000);
  });
}
