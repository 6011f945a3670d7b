import { defineStateStoreConformance } from "@agent-computer/testing/conformance";
import { describe, it } from "vitest";
import { PostgresStateStore } from "../src/postgres-state-store.js";
import { databaseAnswers, workerDatabaseUrl } from "./test-database.js";

const answers = await databaseAnswers();

if (answers) {
  const url = await workerDatabaseUrl();
  defineStateStoreConformance({
    name: "postgres",
    createStore: async () => {
      const store = new PostgresStateStore({ connectionString: url });
      await store.migrate();
      return store;
    },
    openAnother: () => new PostgresStateStore({ connectionString: url }),
    closeStore: (store) => (store as PostgresStateStore).close(),
  });
} else {
  describe.skip("postgres state store (skipped: no PostgreSQL answers at the test URL; run .ci/postgres-setup.sh)", () => {
    it("needs PostgreSQL at AGENT_COMPUTER_TEST_PG_URL (CI fails instead of skipping)", () => {});
  });
}
