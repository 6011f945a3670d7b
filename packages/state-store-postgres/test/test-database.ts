import pg from "pg";

/**
 * The test database: AGENT_COMPUTER_TEST_PG_URL, or the role and database
 * `.ci/run` creates on the local server.
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
