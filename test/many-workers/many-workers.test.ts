import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ComputerHomeRecords, ContentKeyring, ObjectAgentHomeStore } from "@agent-computer/home-store-s3";
import { LeaseEngine } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type RunRecord, RunRecords } from "@agent-computer/runtime";
import { PostgresStateStore } from "@agent-computer/state-store-postgres";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { type LocalS3, startLocalS3 } from "../../packages/home-store-s3/test/local-s3.js";
import { databaseAnswers, workerDatabaseUrl } from "../../packages/state-store-postgres/test/test-database.js";
import { compiledScript } from "../support/compiled-script.js";
import { botBytes, botFile } from "./bot-bytes.js";
import type { WorkerConfig } from "./worker-config.js";

// Three worker PROCESSES of one deployment share one PostgreSQL store, one
// S3 home store (s3rver) and one Docker engine. Bots of one Team computer
// run on different workers at once; run-end checkpoints, idle suspension and
// a takeover are driven from different workers; one worker is killed with
// SIGKILL mid-run and another picks its bot up. Every checkpoint is restored
// into a fresh folder and compared byte for byte.

const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "many workers on Docker",
);
const postgres = await databaseAnswers();
if (!postgres && !env.missing) throw new Error("PostgreSQL does not answer at the test URL");

const workerScript = await compiledScript(fileURLToPath(new URL("./worker.ts", import.meta.url)));
const LEASE_TTL_MS = 3000;
const IDLE_MS = 4000;

interface Reply {
  id?: number;
  ok?: boolean;
  [field: string]: unknown;
}

/** A worker process and a way to send it a command and await its answer. */
class Worker {
  readonly child: ChildProcess;
  readonly progress: Reply[] = [];
  private next = 0;
  private readonly waiting = new Map<number, (reply: Reply) => void>();
  readonly ready: Promise<void>;

  constructor(config: WorkerConfig) {
    this.child = spawn(process.execPath, [workerScript, JSON.stringify(config)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    let started: () => void = () => {};
    this.ready = new Promise((resolve) => {
      started = resolve;
    });
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      const reply = JSON.parse(line) as Reply;
      if (reply.ready) started();
      else if (reply.id === undefined) this.progress.push(reply);
      else this.waiting.get(reply.id)?.(reply);
    });
  }

  send(command: Record<string, unknown>): Promise<Reply> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  async ok(command: Record<string, unknown>): Promise<Reply> {
    const reply = await this.send(command);
    if (!reply.ok) throw new Error(`${JSON.stringify(command)} failed: ${reply.code} ${reply.message}`);
    return reply;
  }

  async written(botId: string): Promise<void> {
    while (!this.progress.some((p) => p.progress === "written" && p.botId === botId))
      await new Promise((resolve) => setTimeout(resolve, 50));
  }

  stop(): void {
    this.child.stdin!.end();
  }
}

if (!env.missing) {
  describe("many workers, one deployment, on Docker", () => {
    let s3: LocalS3 | undefined;
    const cleanups: (() => Promise<unknown>)[] = [];
    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
      await s3?.close();
    });

    it("keeps every run's computer, every checkpoint and the run records right across three workers and a kill -9", async () => {
      s3 = await startLocalS3("many-workers");
      const dataDir = await temporaryDataDir();
      const run = randomUUID().slice(0, 8);
      const deployment = `many-${run}`;
      const workspaceId = `many-${run}`;
      const computerId = `team-${workspaceId}`;
      const contentKey = randomBytes(32);
      const postgresUrl = await workerDatabaseUrl();
      const stateStore = new PostgresStateStore({ connectionString: postgresUrl });
      await stateStore.migrate();
      cleanups.push(() => stateStore.close());
      const config = (name: string): WorkerConfig => ({
        name,
        deployment,
        postgresUrl,
        s3: s3!.config,
        bucket: s3!.bucket,
        dataDir,
        contentKey: contentKey.toString("base64"),
        workspaceId,
        computerId,
        leaseTtlMs: LEASE_TTL_MS,
        idleMs: IDLE_MS,
      });
      const leases = new LeaseEngine(stateStore);
      const workers = [0, 1, 2].map((i) => new Worker(config(`w${i}`)));
      const [w0, w1, w2] = workers as [Worker, Worker, Worker];
      cleanups.push(async () => {
        for (const w of workers) w.child.kill("SIGKILL");
        const docker = new Docker();
        const record = await leases.getComputer(computerId);
        if (record?.providerRef)
          await docker.getContainer(record.providerRef.slice("docker:".length)).remove({ force: true });
      });
      await Promise.all(workers.map((w) => w.ready));

      /** Restores the latest checkpoint into a fresh folder and checks every bot file in it. */
      const restoredFiles = async (): Promise<string[]> => {
        const fresh = mkdtempSync(join(tmpdir(), "many-restore-"));
        const store = new ObjectAgentHomeStore({
          s3: s3!.config,
          bucket: s3!.bucket,
          dataDir: join(fresh, "cache"),
          keyring: new ContentKeyring(contentKey),
          records: new ComputerHomeRecords({ leases, computerIds: () => [computerId] }),
        });
        const target = join(fresh, "home");
        await store.restore({ homeKey: computerId, target: { dir: target } });
        const files: string[] = [];
        for (const bot of readdirSync(join(target, "bots"))) {
          for (const name of readdirSync(join(target, "bots", bot))) {
            const generation = Number(/^gen-(\d+)\.bin$/.exec(name)?.[1]);
            expect(new Uint8Array(readFileSync(join(target, "bots", bot, name)))).toEqual(botBytes(bot, generation));
            files.push(botFile(bot, generation));
          }
        }
        return files.sort();
      };

      // 1. w2 uses the computer first, so by its own maps it is idle from then on.
      await w2.ok({ op: "run", botId: "epsilon", generation: 1, holdMs: 0 });
      // 2. Two bots at once on two workers; the first to end defers, the last one saves.
      const alpha = w0.ok({ op: "run", botId: "alpha", generation: 1, holdMs: 12_000 });
      await w0.written("alpha");
      const beta = await w1.ok({ op: "run", botId: "beta", generation: 1, holdMs: 1000 });
      expect(beta.uses).toBeGreaterThan(0);
      // 3. Past IDLE_MS since w2's last use, w2 does not suspend the computer under alpha on w0.
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS + 500));
      expect((await w2.ok({ op: "suspendIdle" })).suspended).toEqual([]);
      expect((await alpha).uses).toBeGreaterThan(5); // every one of them succeeded
      const w1Events = (await w1.ok({ op: "events" })).events as { type: string }[];
      expect(w1Events.map((e) => e.type)).toContain("checkpoint-deferred");
      expect(((await w0.ok({ op: "events" })).events as { type: string }[]).map((e) => e.type)).toContain(
        "checkpointing",
      );
      expect(await restoredFiles()).toEqual([botFile("alpha", 1), botFile("beta", 1), botFile("epsilon", 1)]);

      // 4. Idle: the third worker suspends it once nobody used it for IDLE_MS.
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS + 500));
      expect((await w2.ok({ op: "suspendIdle" })).suspended).toEqual([computerId]);
      expect((await leases.getComputer(computerId))?.runs.at(-1)?.endReason).toBe("idle");

      // 5. A run waits for a takeover on w1; a person takes over and releases through w2.
      await w1.ok({ op: "requestTakeover", botId: "gamma" });
      await w2.ok({ op: "takeover", botId: "gamma" });
      expect((await w1.ok({ op: "endWaiting", botId: "gamma" })).resumed).toBe(true);

      const revisionsOf = async (w: Worker) =>
        ((await w.ok({ op: "events" })).events as { type: string; detail: { revision?: number } }[])
          .filter((e) => e.type === "checkpointing")
          .map((e) => e.detail.revision as number);
      const w0Revisions = await revisionsOf(w0);

      // 6. w0 is killed mid-run; w1 picks its bot up once the lease lapses.
      const doomed = w0.send({ op: "run", botId: "delta", generation: 1, holdMs: 60_000 });
      void doomed;
      await w0.written("delta");
      w0.child.kill("SIGKILL");
      const picked = await w1.ok({ op: "run", botId: "delta", generation: 2, holdMs: 1000 });
      expect(picked.uses).toBeGreaterThan(0);
      const files = await restoredFiles();
      expect(files).toEqual(expect.arrayContaining([botFile("alpha", 1), botFile("beta", 1), botFile("delta", 2)]));

      // 7. Run records add up: at most one open per computer, every closed one with a reason.
      const records = new RunRecords(stateStore, deployment);
      const all: RunRecord[] = [];
      for (let page = 0, pages = 1; page < pages; page++) {
        const listed = await records.list(page);
        pages = listed.pages;
        all.push(...listed.records);
      }
      expect(all.length).toBeGreaterThanOrEqual(2);
      expect(all.filter((r) => r.endedAt === undefined).length).toBeLessThanOrEqual(1);
      expect(all.filter((r) => r.endedAt !== undefined).every((r) => r.endReason !== undefined)).toBe(true);
      expect(all.map((r) => r.endReason)).toContain("idle");
      // Fencing: no two checkpoints committed the same revision, and the record holds the last one.
      const revisions = [...w0Revisions, ...(await revisionsOf(w1)), ...(await revisionsOf(w2))];
      expect(new Set(revisions).size).toBe(revisions.length);
      expect((await leases.getComputer(computerId))?.revision).toBe(Math.max(...revisions));
      for (const w of [w1, w2]) w.stop();
    }, 600_000);
  });
}
