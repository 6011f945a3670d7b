import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentComputerError } from "@agent-computer/core";

/**
 * One desktop start at a time on this host, across host computers and the
 * processes that drive them. Each computer's desktop runtime claims the
 * lowest free X display under its own lock (desktop-state.ts in
 * packages/desktop-runtime), and skips displays another X server holds;
 * but host computers share the host's displays, so two starting at once
 * both saw :100 free and the second Xvfb failed ("Server is already active
 * for display 100"). A start ends with its X server up, so the next one
 * skips its display.
 */
const LOCK = join(tmpdir(), "agent-computer-host-display-start.lock");
const WAIT_MS = 180_000;

export async function withDisplayStartLock<T>(work: () => Promise<T>): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await mkdir(LOCK, { mode: 0o700 });
      await writeFile(join(LOCK, "owner"), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      await breakStaleLock();
      if (Date.now() > until) {
        throw new AgentComputerError("UNAVAILABLE", "Another host computer's desktop is still starting; try again.");
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    return await work();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}

/** Takes over a lock whose owner process is gone (a crashed app). */
async function breakStaleLock(): Promise<void> {
  const owner = Number(await readFile(join(LOCK, "owner"), "utf8").catch(() => ""));
  if (!owner) {
    // Between mkdir and writing its owner: give it a moment.
    const age = Date.now() - ((await stat(LOCK).catch(() => undefined))?.mtimeMs ?? Date.now());
    if (age < 2000) return;
  } else if (alive(owner)) return;
  const grave = `${LOCK}.stale-${process.pid}-${Date.now()}`;
  await rename(LOCK, grave).then(
    () => rm(grave, { recursive: true, force: true }),
    () => {}, // another waiter broke it first
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
