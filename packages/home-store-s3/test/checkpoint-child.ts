// One checkpointing process for crash.test.ts. It loads, prints "loaded" and
// waits for "go <source> <stop-stage>" on stdin (so the parent can start the
// next child while it checks the last one), then checkpoints <source> of home
// "crash" through a real fenced commit (SQLite-backed lease engine shared
// with the parent), printing each stage. At the stop stage it halts until
// the parent kills it with SIGKILL.
import { createInterface } from "node:readline";
import { LeaseEngine } from "@agent-computer/leases";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";
import { ComputerHomeRecords, ContentKeyring, ObjectAgentHomeStore } from "../src/index.js";
import { s3ConfigFor } from "./local-s3.js";

const [port, bucket, dataDir, stateFile] = process.argv.slice(2) as [string, string, string, string];
let stopAt = "none";
const leases = new LeaseEngine(SqliteStateStore.open({ path: stateFile }));
const records = new ComputerHomeRecords({ leases, computerIds: () => ["crash"] });
const store = new ObjectAgentHomeStore({
  s3: s3ConfigFor(Number(port)),
  bucket,
  dataDir,
  keyring: ContentKeyring.fromEnv("CRASH_CONTENT_KEY"),
  records,
  partBytes: 64 * 1024,
  partConcurrency: 2,
  // crash-chunked.test.ts runs the same child on format 2.
  format: process.env.CRASH_FORMAT === "2" ? 2 : 1,
  chunkGraceMs: Number(process.env.CRASH_CHUNK_GRACE_MS ?? 60 * 60 * 1000),
  onStage: async (event) => {
    const part = event.stage === "uploading" ? `:${event.part}` : "";
    process.stdout.write(`stage:${event.stage}${part}\n`);
    if (`${event.stage}${part}` === stopAt) await new Promise(() => {}); // until SIGKILL
  },
});
process.stdout.write("loaded\n");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const [, source, stop] = ((await lines.next()).value as string).split(" ") as [string, string, string];
stopAt = stop;
// One holder for every child: a killed child's live lease passes to the next one instead of blocking it.
const lease = await leases.acquireCheckpoint({ computerId: "crash", holder: "crash-writer", ttlMs: 60_000 });
const record = await leases.getComputer("crash");
process.stdout.write("ready\n");
await store.checkpoint({
  homeKey: "crash",
  source: { dir: source },
  commit: async (next) => {
    await leases.commitRevision({ computerId: "crash", lease, expectedRevision: record?.revision ?? 0, next });
  },
});
process.stdout.write("saved\n");
process.exit(0);
