// One worker PROCESS of the many-workers test: a computer runtime on the
// shared PostgreSQL store, S3 home store and Docker engine. It takes one
// command per stdin line and answers each on stdout, one JSON line, so the
// parent drives bots, suspensions and takeovers on chosen workers.
import { createInterface } from "node:readline";
import { ComputerHomeRecords, ContentKeyring, ObjectAgentHomeStore } from "@agent-computer/home-store-s3";
import { LeaseEngine } from "@agent-computer/leases";
import { dockerProvider } from "@agent-computer/provider-docker";
import { type BotRun, type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { PostgresStateStore } from "@agent-computer/state-store-postgres";
import { botBytes, botFile } from "./bot-bytes.js";
import type { WorkerConfig } from "./worker-config.js";

const config = JSON.parse(process.argv[2] as string) as WorkerConfig;
const stateStore = new PostgresStateStore({ connectionString: config.postgresUrl, poolConfig: { max: 4 } });
const events: ComputerEvent[] = [];
const runtime = createComputerRuntime({
  provider: dockerProvider({ dataDir: config.dataDir }),
  stateStore,
  homeStore: new ObjectAgentHomeStore({
    s3: config.s3,
    bucket: config.bucket,
    dataDir: config.dataDir,
    keyring: new ContentKeyring(Buffer.from(config.contentKey, "base64")),
    records: new ComputerHomeRecords({ leases: new LeaseEngine(stateStore), computerIds: () => [config.computerId] }),
  }),
  deployment: config.deployment,
  leaseTtlMs: config.leaseTtlMs,
  idleMs: config.idleMs,
  maxActiveMs: 0,
  onEvent: (e) => events.push(e),
});
const waiting = new Map<string, { run: BotRun; done: Promise<void> }>();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (reply: object) => process.stdout.write(`${JSON.stringify(reply)}\n`);

interface Command {
  id: number;
  op: "run" | "suspendIdle" | "requestTakeover" | "endWaiting" | "takeover" | "events";
  botId?: string;
  generation?: number;
  holdMs?: number;
}

/**
 * One run: take the computer, write this generation's file, keep using the
 * computer for `holdMs` (a command every 200 ms; any failure means the run
 * lost its computer), then end it. BOT_BUSY (the bot's lease still held by a
 * killed worker's run) is retried until the lease lapses.
 */
async function run(botId: string, generation: number, holdMs: number) {
  for (;;) {
    const run = runtime.startRun({ workspaceId: config.workspaceId, botId, userId: `user-${botId}` });
    try {
      const machine = await run.machine();
      await machine.files.write(botFile(botId, generation), botBytes(botId, generation));
      say({ progress: "written", botId, generation, worker: config.name });
      let uses = 0;
      const until = performance.now() + holdMs;
      while (performance.now() < until) {
        const result = await (await run.machine()).exec({ argv: ["true"] });
        if (result.exitCode !== 0) throw new Error(`the computer failed a command (${result.exitCode})`);
        uses++;
        await sleep(200);
      }
      await run.end("completed");
      return { uses };
    } catch (error) {
      await run.end("failed");
      if ((error as { code?: string }).code === "BOT_BUSY") {
        await sleep(500);
        continue;
      }
      throw error;
    }
  }
}

async function handle(command: Command): Promise<object> {
  const botId = command.botId as string;
  switch (command.op) {
    case "run":
      return run(botId, command.generation ?? 0, command.holdMs ?? 0);
    case "suspendIdle":
      return { suspended: await runtime.suspendIdle() };
    case "requestTakeover": {
      const run = runtime.startRun({ workspaceId: config.workspaceId, botId, userId: `user-${botId}` });
      await run.machine();
      const done = run.requestTakeover("a login page");
      await run.waitingRecorded;
      waiting.set(botId, { run, done });
      return { waiting: true };
    }
    case "endWaiting": {
      const entry = waiting.get(botId);
      if (!entry) throw new Error(`no waiting run of ${botId}`);
      await entry.done; // the takeover ended on another worker: seen in the store
      const result = await (await entry.run.machine()).exec({ argv: ["true"] });
      await entry.run.end(result.exitCode === 0 ? "completed" : "failed");
      return { resumed: result.exitCode === 0 };
    }
    case "takeover": {
      const computerId = runtime.computerIdFor({ workspaceId: config.workspaceId, botId });
      const lease = await runtime.takeover({ computerId, botId, holder: `person-${config.name}`, ttlMs: 60_000 });
      await runtime.releaseTakeover(lease);
      return { took: true };
    }
    case "events":
      return { events: events.map((e) => ({ type: e.type, detail: e.detail })) };
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const command = JSON.parse(line) as Command;
  handle(command).then(
    (result) => say({ id: command.id, ok: true, ...result }),
    (error: Error & { code?: string }) => say({ id: command.id, ok: false, code: error.code, message: error.message }),
  );
});
lines.on("close", () => {
  void stateStore.close().finally(() => process.exit(0));
});
say({ ready: config.name });
