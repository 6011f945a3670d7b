import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** A fresh data folder (homes, stores) for one test file, removed when the file's tests end. */
export async function temporaryDataDir(prefix = "agent-computer-test-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}
