import pg from "pg";

/**
 * The server's test database: AGENT_COMPUTER_TEST_PG_URL, or the role and
 * database `.ci/postgres-setup.sh` creates on the local server.
 */
export const TEST_DATABASE_URL =
  process.env.AGENT_COMPUTER_TEST_PG_URL ??
  "postgres://agent_computer:agent_computer@127.0.0.1:5432/agent_computer_test";

/**
 * Whether the server answers. Under CI a missing server fails the suite
 * instead of skipping it.
 */
export async function databaseAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch (error) {
    if (process.env.CI) {
      throw new Error(`CI is set but PostgreSQL does not answer at the test URL: ${(error as Error).message}`);
    }
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A database of this vitest worker's own on the test server, made on first
 * use: files run side by side (docs/testing.md), and two suites migrating
 * or contending for the same computer ids in one table would disturb each
 * other. Given AGENT_COMPUTER_TEST_PG_URL, that database is used as it is.
 */
export async function workerDatabaseUrl(): Promise<string> {
  if (process.env.AGENT_COMPUTER_TEST_PG_URL) return TEST_DATABASE_URL;
  const url = new URL(TEST_DATABASE_URL);
  const name = `${url.pathname.slice(1)}_w${process.env.VITEST_POOL_ID ?? "0"}`;
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0) {
      // 42P04: another process made it first.
      await client.query(`CREATE DATABASE "${name}"`).catch((error: { code?: string; message: string }) => {
        if (error.code === "42P04") return;
        throw new Error(
          `cannot create the worker's test database ${name} (${error.message}); run .ci/postgres-setup.sh, which lets the test role create databases`,
        );
      });
    }
  } finally {
    await client.end().catch(() => {});
  }
  url.pathname = `/${name}`;
  return url.toString();
}
