import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { COMPUTER_LABELS } from "@agent-computer/core";
import { LeaseEngine } from "@agent-computer/leases";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { startMcpServer } from "../src/start-mcp-server.js";
import type { Content } from "./mcp-checks.js";

// The server's lifecycle on a real Docker engine (issue 47): its state
// outlives the process, its computer stops with it or when idle, and a
// second server with its own state is refused. The bin as built
// (`dist/main.js`): build the package first.
const bin = join(dirname(fileURLToPath(import.meta.url)), "../dist/main.js");
const host = await checkDockerHost();

/** The environment of a launch: this process's (the computer image's name too), without other settings, plus `extra`. */
const env = (extra: Record<string, string>) => {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !/^(SANDBOX_|E2B_|DAYTONA_|BOX_|BOAT_|NOVITA_|KUBERNETES_SANDBOX_|MCP_|AGENT_COMPUTER_(DATA_DIR|WORKSPACE|BOT|DATABASE_URL)$)/.test(
          key,
        ) && key !== "COMPUTER_MAX_ACTIVE_MS",
    ),
  ) as Record<string, string>;
  return { ...base, SANDBOX_PROVIDER: "docker", ...extra };
};

/** A workspace of its own for each test: its Team computer is `team-<workspace>`, no other test's. */
const workspace = () => `mcp-life-${randomUUID().slice(0, 8)}`;
const used: string[] = [];

/** The containers of a computer (its own and its display's), running ones unless `all`. */
async function containersOf(docker: Docker, computerId: string, all = false) {
  return docker.listContainers({
    all,
    filters: JSON.stringify({ label: [`${COMPUTER_LABELS.computerId}=${computerId}`] }),
  });
}

/** The provider ref the server's SQLite store records for a computer. */
async function recordedRef(dataDir: string, computerId: string): Promise<string | null | undefined> {
  const store = SqliteStateStore.open({ path: join(dataDir, "state.sqlite") });
  try {
    return (await new LeaseEngine(store).getComputer(computerId))?.providerRef;
  } finally {
    store.close();
  }
}

/** The real bin over stdio, as an MCP client launches it. */
async function launch(extra: Record<string, string>) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin],
    env: env(extra),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: "lifecycle-test", version: "0.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const text = (result: Record<string, unknown>) => ((result.content as Content | undefined)?.[0]?.text ?? "") as string;

async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

if (host.missing) {
  if (process.env.CI)
    it("the MCP server's lifecycle on Docker needs an engine and the computer image", () => {
      throw new Error(`CI is set and ${host.missing}`);
    });
  else
    describe.skip(`the MCP server's lifecycle on Docker (skipped: ${host.missing})`, () =>
      it("needs Docker", () => {}));
} else {
  describe("the MCP server's lifecycle on Docker", () => {
    const docker = host.docker;
    afterAll(async () => {
      // Whatever a failed test left: no container of these computers outlives the file.
      for (const computerId of used)
        for (const container of await containersOf(docker, computerId, true))
          await docker
            .getContainer(container.Id)
            .remove({ force: true })
            .catch(() => {});
    });

    it("two launches in a row for one bot: one computer, reconnected, and none running after each client exits", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "mcp-life-"));
      const ws = workspace();
      const computerId = `team-${ws}`;
      used.push(computerId);
      const settings = { AGENT_COMPUTER_DATA_DIR: dataDir, AGENT_COMPUTER_WORKSPACE: ws, AGENT_COMPUTER_BOT: "alpha" };

      const first = await launch(settings);
      const wrote = await first.client.callTool({
        name: "write_file",
        arguments: { path: "note.txt", content: "written by the first launch" },
      });
      expect(wrote.isError, text(wrote)).toBeFalsy();
      const ref = await recordedRef(dataDir, computerId);
      expect(ref).toMatch(/^docker:/);
      expect((await containersOf(docker, computerId)).length).toBeGreaterThan(0);
      await first.client.close();
      expect(first.stderr()).toContain(`computer ${computerId}: stopped`);
      expect(await containersOf(docker, computerId)).toEqual([]);

      const second = await launch(settings);
      expect(second.stderr()).toContain(`computer ${computerId}: reconnects to ${ref} on first use`);
      const read = await second.client.callTool({ name: "read_file", arguments: { path: "note.txt" } });
      expect(text(read)).toContain("written by the first launch");
      expect(await recordedRef(dataDir, computerId)).toBe(ref);
      await second.client.close();
      expect(await containersOf(docker, computerId)).toEqual([]);
      // One computer: every container it ever had is the first launch's.
      const all = await containersOf(docker, computerId, true);
      expect(all.filter((c) => c.Labels[COMPUTER_LABELS.managed] === "true").map((c) => `docker:${c.Id}`)).toEqual([
        ref,
      ]);
    }, 55_000);

    it("refuses a second server with its own state while the first runs the computer: CONFLICT naming the machine", async () => {
      const ws = workspace();
      const computerId = `team-${ws}`;
      used.push(computerId);
      const first = await launch({
        AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-life-a-")),
        AGENT_COMPUTER_WORKSPACE: ws,
      });
      try {
        const ran = await first.client.callTool({ name: "shell", arguments: { command: "true" } });
        expect(ran.isError, text(ran)).toBeFalsy();
        const [running] = await containersOf(docker, computerId);
        const started = Date.now();
        const second = spawnSync(process.execPath, [bin], {
          env: env({
            AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-life-b-")),
            AGENT_COMPUTER_WORKSPACE: ws,
          }),
          encoding: "utf8",
          timeout: 40_000,
        });
        expect(second.status).toBe(1);
        expect(second.stderr).toMatch(/^agent-computer-mcp cannot start: CONFLICT: /m);
        expect(second.stderr).toContain(`Computer "${computerId}" already runs as docker:`);
        expect(second.stderr).toContain("AGENT_COMPUTER_DATA_DIR");
        // Refused at start, not after bringing up anything: the bin's own start is the bound (see below).
        expect(Date.now() - started).toBeLessThan(30_000);
        // The first server's machine is the only one, untouched.
        expect((await containersOf(docker, computerId)).map((c) => c.Id)).toContain(running?.Id);
      } finally {
        await first.client.close();
      }
      expect(await containersOf(docker, computerId)).toEqual([]);
    }, 55_000);

    it("two servers at once sharing the state: one machine, and the first to exit leaves it to the other's run", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "mcp-life-shared-"));
      const ws = workspace();
      const computerId = `team-${ws}`;
      used.push(computerId);
      const settings = { AGENT_COMPUTER_DATA_DIR: dataDir, AGENT_COMPUTER_WORKSPACE: ws, AGENT_COMPUTER_BOT: "alpha" };
      const first = await launch(settings);
      const second = await launch(settings);
      try {
        const wrote = await first.client.callTool({
          name: "write_file",
          arguments: { path: "shared.txt", content: "the first server's" },
        });
        expect(wrote.isError, text(wrote)).toBeFalsy();
        // The bot's run on the first server holds its execution lease: the second waits its turn.
        const busy = await second.client.callTool({ name: "read_file", arguments: { path: "shared.txt" } });
        expect(busy.isError).toBe(true);
        expect(text(busy)).toMatch(/^BOT_BUSY: /);
        expect(second.stderr()).toContain(`computer ${computerId}: starts on first use`);
      } finally {
        await second.client.close();
      }
      expect(second.stderr()).toContain(`computer ${computerId}: left running, another server still uses it (BOT_BUSY`);
      const running = await containersOf(docker, computerId);
      expect(running.filter((c) => c.Labels[COMPUTER_LABELS.managed] === "true")).toHaveLength(1);
      await first.client.close();
      expect(first.stderr()).toContain(`computer ${computerId}: stopped`);
      expect(await containersOf(docker, computerId)).toEqual([]);
    }, 55_000);

    it("a start with the computer image missing answers at once, telling to run --prepare", () => {
      const started = Date.now();
      const result = spawnSync(process.execPath, [bin], {
        env: env({
          AGENT_COMPUTER_DATA_DIR: join(tmpdir(), `mcp-life-${randomUUID()}`),
          AGENT_COMPUTER_IMAGE_TAG: `missing-${randomUUID().slice(0, 8)}`,
        }),
        encoding: "utf8",
        timeout: 40_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^agent-computer-mcp cannot start: UNAVAILABLE: The computer image \S+:missing-/);
      expect(result.stderr).toContain("agent-computer-mcp --prepare");
      // Nothing of a build (which takes minutes) began; the bound is the bin's own start on a
      // loaded 2-core machine, where main.test.ts's refusals take up to 13 s.
      expect(result.stderr).not.toMatch(/base-image|build started/);
      expect(Date.now() - started).toBeLessThan(30_000);
    });

    it("--prepare says what it did stage by stage and exits 0; with the image there it builds nothing", () => {
      const result = spawnSync(process.execPath, [bin, "--prepare"], {
        env: env({}),
        encoding: "utf8",
        timeout: 40_000,
      });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stderr).toContain(`preparing the computer image ${host.image}`);
      expect(result.stderr).toMatch(/^cache (done|skipped): /m);
      expect(result.stderr).toContain(`computer image ${host.image} is already built; the server can start now`);
      expect(result.stdout).toBe("");
    });

    it("suspends the computer of a client that stays connected but idle for SANDBOX_IDLE_MS, and resumes it on the next call", async () => {
      const ws = workspace();
      const computerId = `team-${ws}`;
      used.push(computerId);
      const lines: string[] = [];
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const server = await startMcpServer({
        env: env({
          AGENT_COMPUTER_DATA_DIR: await mkdtemp(join(tmpdir(), "mcp-life-idle-")),
          AGENT_COMPUTER_WORKSPACE: ws,
          SANDBOX_IDLE_MS: "3000",
        }),
        log: (line) => lines.push(line),
        stdio: () => serverSide,
      });
      const client = new Client({ name: "idle-test", version: "0.0.0" });
      await client.connect(clientSide);
      try {
        await client.callTool({
          name: "write_file",
          arguments: { path: "kept.txt", content: "kept over a suspension" },
        });
        expect((await containersOf(docker, computerId)).length).toBeGreaterThan(0);
        await eventually(
          async () => (await containersOf(docker, computerId)).length === 0,
          15_000,
          "the idle computer's containers stop",
        );
        expect(lines).toContain(`computer ${computerId}: suspended after 3000 ms idle`);
        const read = await client.callTool({ name: "read_file", arguments: { path: "kept.txt" } });
        expect(text(read)).toContain("kept over a suspension");
      } finally {
        await client.close();
        await server.stop();
      }
      expect(await containersOf(docker, computerId)).toEqual([]);
    }, 55_000);
  });
}
