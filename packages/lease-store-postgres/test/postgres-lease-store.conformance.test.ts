import { defineStateStoreConformance } from "@agent-computer/core/conformance";
import { describe, it } from "vitest";
import { PostgresLeaseStore } from "../src/postgres-lease-store.js";
import { databaseAnswers, TEST_DATABASE_URL } from "./test-database.js";

const answers = await databaseAnswers();

if (answers) {
  defineStateStoreConformance({
    name: "postgres",
    createStore: async () => {
      const store = new PostgresLeaseStore({ connectionString: TEST_DATABASE_URL });
      await store.migrate();
      return store;
    },
    openAnother: () => new PostgresLeaseStore({ connectionString: TEST_DATABASE_URL }),
    closeStore: (store) => (store as PostgresLeaseStore).close(),
  });
} else {
  describe("postgres state store", () => {
    it.skip("needs PostgreSQL at AGENT_COMPUTER_TEST_PG_URL (CI fails instead of skipping)", () => {});
  });
}
