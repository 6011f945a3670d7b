// `npm run bench -- lease` (PostgreSQL part): lease throughput on the test
// database beside `SELECT 1` through the same pool.
import { benchOptionsFromArgv, runBench, stateStoreBenchCases } from "@agent-computer/testing/bench";
import pg from "pg";
import { PostgresStateStore } from "../src/index.js";
import { TEST_DATABASE_URL } from "../test/test-database.js";

const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 10 });
const store = new PostgresStateStore({ pool });
await store.migrate();

await runBench(
  "lease engine on PostgreSQL",
  await stateStoreBenchCases({
    label: "PostgreSQL",
    store,
    roundTrip: { label: "SELECT 1", run: () => pool.query("SELECT 1") },
  }),
  { runs: 5, warmup: 1, ...benchOptionsFromArgv() },
);
await pool.end();
