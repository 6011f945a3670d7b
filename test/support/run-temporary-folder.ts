import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Set while a run's folder is TMPDIR: vitest calls the set-up once per project too, and nests no folder. */
const RUN_FOLDER = "AGENT_COMPUTER_RUN_TMPDIR";

/**
 * vitest's global set-up: one temporary folder per test run, given to every
 * test file (and whatever it starts) as TMPDIR, and removed when the run
 * ends. Suites make their folders with `mkdtemp(join(tmpdir(), …))`, and
 * many never remove them (machines a test left running on the fake
 * provider keep their homes): one `npm test` of the runtime and the MCP
 * server alone left about 290 folders in the system's temporary folder,
 * and a contributor's machine had piled up 1.4 GB of the fake provider's
 * alone. Node's `tmpdir()` reads TMPDIR at each call, and the forked
 * workers inherit this process's environment.
 *
 * The name is short and made once: Chromium's singleton socket lives in
 * TMPDIR, and a socket's path holds at most 107 bytes (a folder made once
 * for the run and once per project, nested, was too long for it).
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env[RUN_FOLDER] !== undefined && process.env[RUN_FOLDER] === process.env.TMPDIR) return async () => {};
  const outer = process.env.TMPDIR;
  const run = await mkdtemp(join(tmpdir(), "ac-run-"));
  // As /tmp is: processes tests start as other users (the host provider's computer user) make their files here too.
  await chmod(run, 0o1777);
  process.env.TMPDIR = run;
  process.env[RUN_FOLDER] = run;
  return async () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    delete process.env[RUN_FOLDER];
    await rm(run, { recursive: true, force: true });
  };
}
