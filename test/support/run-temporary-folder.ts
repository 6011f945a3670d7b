import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
 */
export default async function setup(): Promise<() => Promise<void>> {
  const outer = process.env.TMPDIR;
  const run = await mkdtemp(join(tmpdir(), "agent-computer-run-"));
  process.env.TMPDIR = run;
  return async () => {
    if (outer === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = outer;
    await rm(run, { recursive: true, force: true });
  };
}
