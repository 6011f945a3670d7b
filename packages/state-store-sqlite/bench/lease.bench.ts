// `npm run bench -- lease` (SQLite part): lease throughput on one SQLite
// file beside an empty IMMEDIATE transaction on the same file.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchOptionsFromArgv, runBench, stateStoreBenchCases } from "@agent-computer/testing/bench";
import Database from "better-sqlite3";
import { SqliteStateStore } from "../src/index.js";

const file = join(mkdtempSync(join(tmpdir(), "lease-bench-")), "state.db");
const store = SqliteStateStore.open({ path: file });
const raw = new Database(file);
raw.pragma("journal_mode = WAL");
raw.pragma("synchronous = FULL");
const empty = raw.transaction(() => {});

await runBench(
  "lease engine on SQLite",
  await stateStoreBenchCases({
    label: "SQLite",
    store,
    roundTrip: { label: "empty BEGIN IMMEDIATE transaction", run: async () => empty.immediate() },
  }),
  { runs: 5, warmup: 1, ...benchOptionsFromArgv() },
);
store.close();
