import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LeaseEngine } from "@agent-computer/leases";
import { PostgresStateStore } from "@agent-computer/state-store-postgres";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startMcpServer } from "../src/start-mcp-server.js";
import { stateStoreFromEnvironment } from "../src/state-store-from-environment.js";

// The PostgreSQL server of the state-store-postgres suites (.ci/postgres-setup.sh), in a database of this file's own.
const TEST_URL =
  process.env.AGENT_COMPUTER_TEST_PG_URL ??
  "postgres://agent_computer:agent_computer@127.0.0.1:5432/agent_computer_test";

/** This file's own database on the test server (made on first use), or why there is none. */
async function ownDatabase(): Promise<{ url: string } | { missing: string }> {
  const client = new pg.Client({ connectionString: TEST_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    if (process.env.AGENT_COMPUTER_TEST_PG_URL) return { url: TEST_URL };
    const url = new URL(TEST_URL);
    const name = `${url.pathname.slice(1)}_mcp_server`;
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0)
      await client.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
        if (error.code !== "42P04") throw error; // 42P04: another process made it first.
      });
    url.pathname = `/${name}`;
    return { url: url.toString() };
  } catch (error) {
    return { missing: `PostgreSQL does not answer at the test URL: ${(error as Error).message}` };
  } finally {
    await client.end().catch(() => {});
  }
}

describe("the MCP server's state store", () => {
  it("is SQLite at <data dir>/state.sqlite by default, made with its folder", async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), "mcp-state-")), "not-yet");
    const chosen = await stateStoreFromEnvironment({}, dataDir);
    try {
      expect(chosen.where).toBe(`SQLite ${join(dataDir, "state.sqlite")}`);
      expect(existsSync(join(dataDir, "state.sqlite"))).toBe(true);
      const engine = new LeaseEngine(chosen.store);
      await engine.createComputer({ computerId: "team-a", providerKind: "fake", homeKey: "a", storageId: "a" });
      expect((await engine.getComputer("team-a"))?.homeKey).toBe("a");
    } finally {
      await chosen.close();
    }
  });

  it("is PostgreSQL with AGENT_COMPUTER_DATABASE_URL: migrated at start, the server's computer recorded there, the URL never said (fails under CI without a server)", async () => {
    const database = await ownDatabase();
    if ("missing" in database) {
      if (process.env.CI) throw new Error(`CI is set and ${database.missing}`);
      return;
    }
    const workspace = `mcp-pg-${randomUUID().slice(0, 8)}`;
    const lines: string[] = [];
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = await startMcpServer({
      env: {
        SANDBOX_PROVIDER: "fake",
        AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-state-pg-")),
        AGENT_COMPUTER_DATABASE_URL: database.url,
        AGENT_COMPUTER_WORKSPACE: workspace,
      },
      log: (line) => lines.push(line),
      stdio: () => serverSide,
    });
    const client = new Client({ name: "pg-state-test", version: "0.0.0" });
    await client.connect(clientSide);
    try {
      const ran = await client.callTool({ name: "shell", arguments: { command: "true" } });
      expect(ran.isError).toBeFalsy();
    } finally {
      await client.close();
      await server.stop();
    }
    expect(lines).toContain("state: PostgreSQL (AGENT_COMPUTER_DATABASE_URL)");
    const said = lines.join("\n");
    expect(said).not.toContain(database.url);
    expect(said).not.toContain(`:${new URL(database.url).password}@`);
    const store = new PostgresStateStore({ connectionString: database.url });
    try {
      const record = await new LeaseEngine(store).getComputer(`team-${workspace}`);
      expect(record?.providerRef).toMatch(/^fake:/);
      // Stopped with the server: its last stretch is closed.
      expect(record?.runs.at(-1)?.endReason).toBe("stopped");
    } finally {
      await store.close();
    }
  }, 30_000);
});
