import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import type { StateStore } from "@agent-computer/leases";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";

/** The variable that moves the server's state (leases, computer records) to PostgreSQL. */
export const DATABASE_URL_VARIABLE = "AGENT_COMPUTER_DATABASE_URL";

/** The state store the server runs on, where it is in words, and how to let it go. */
export interface ChosenStateStore {
  readonly store: StateStore;
  /** For the start-up log: a file path, or which variable named the database (never the URL: it holds a password). */
  readonly where: string;
  close(): Promise<void>;
}

/**
 * Where the server keeps leases and computer records so they outlive the
 * process: the next launch for the same workspace reconnects to the
 * computer its record names, and servers sharing the store share the
 * computer (docs/architecture.md §6). SQLite at `<dataDir>/state.sqlite` by
 * default; PostgreSQL when `AGENT_COMPUTER_DATABASE_URL` is set, from the
 * optional `@agent-computer/state-store-postgres`, loaded only then.
 */
export async function stateStoreFromEnvironment(
  env: Record<string, string | undefined>,
  dataDir: string,
): Promise<ChosenStateStore> {
  const url = env[DATABASE_URL_VARIABLE]?.trim();
  if (url) return postgres(url);
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, "state.sqlite");
  const store = SqliteStateStore.open({ path });
  return {
    store,
    where: `SQLite ${path}`,
    async close() {
      store.close();
    },
  };
}

async function postgres(connectionString: string): Promise<ChosenStateStore> {
  let module: typeof import("@agent-computer/state-store-postgres");
  try {
    module = await import("@agent-computer/state-store-postgres");
  } catch (error) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `${DATABASE_URL_VARIABLE} is set, but @agent-computer/state-store-postgres is not installed: install it beside this server (npm install @agent-computer/state-store-postgres), or unset ${DATABASE_URL_VARIABLE} to keep the state in SQLite.`,
      { cause: error, details: { variable: DATABASE_URL_VARIABLE } },
    );
  }
  const store = new module.PostgresStateStore({ connectionString });
  // The store never migrates on its own (its README): one idempotent migrate at start is the server's deploy step.
  await store.migrate().catch(async (error: unknown) => {
    await store.close().catch(() => {});
    throw error;
  });
  return { store, where: `PostgreSQL (${DATABASE_URL_VARIABLE})`, close: () => store.close() };
}
