import { execFile } from "node:child_process";
import { readdir, readFile, rm } from "node:fs/promises";
import { basename } from "node:path";
import { promisify } from "node:util";
import type { HostUser } from "./host-provider-options.js";

/**
 * Every command of a host computer carries this variable, with the
 * computer's id as its value, and so does every process it starts: its
 * children, and what they start in sessions of their own (the desktop's X
 * servers, browsers and screen gateway keep it; they drop only the
 * per-command marker, packages/desktop-runtime/computer/desktop/desktop-lifecycle.ts).
 * Stop and destroy end exactly the processes that carry it: what this
 * computer started and nothing else of the host. A program that clears
 * its own environment (`env -i`) drops it, and outlives a stop.
 */
export const HOST_COMPUTER_MARKER = "AGENT_COMPUTER_HOST";

/**
 * The pids of this host's processes whose environment holds
 * `HOST_COMPUTER_MARKER=<computerId>`. An app running as root without
 * CAP_SYS_PTRACE (root in a container, as Docker starts one) may not read
 * another user's environment: those of the computer's `user` are read by
 * a helper running as that user, which may.
 */
export async function processesOfComputer(computerId: string, user?: HostUser): Promise<number[]> {
  const entry = `${HOST_COMPUTER_MARKER}=${computerId}`;
  const entryBytes = Buffer.from(entry);
  const pids: number[] = [];
  const unreadable: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = await readFile(`/proc/${name}/environ`);
    } catch (error) {
      // Gone, or another user's that this one may not read: not ours, unless it is the computer's user's.
      if ((error as NodeJS.ErrnoException).code === "EACCES") unreadable.push(pid);
      continue;
    }
    if (hasEntry(environ, entryBytes)) pids.push(pid);
  }
  if (user && unreadable.length > 0) pids.push(...(await markedAsUser(entry, unreadable, user)));
  return pids;
}

/** Reads the environments of `pids` as `user` (this program, in a node of its own); the ones holding `entry`. */
const MARKED_AS_USER = `
const [entry, ...pids] = process.argv.slice(1);
const { readFileSync } = require("node:fs");
for (const pid of pids) {
  try {
    if (readFileSync("/proc/" + pid + "/environ", "latin1").split("\\0").includes(entry)) console.log(pid);
  } catch {}
}`;

async function markedAsUser(entry: string, pids: number[], user: HostUser): Promise<number[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ["-e", MARKED_AS_USER, entry, ...pids.map(String)], {
    uid: user.uid,
    gid: user.gid,
    cwd: "/",
    env: {},
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.split("\n").filter(Boolean).map(Number);
}

/**
 * SIGKILLs every process of the computer, in passes 50 ms apart until a
 * pass finds none (at least three, at most 20), as core's command tree kill
 * does: a process forked while a pass ran is caught by a later one.
 * Returns how many were signalled.
 */
export async function endProcessesOfComputer(computerId: string, user?: HostUser): Promise<number> {
  let signalled = 0;
  const displays = new Map<number, number>();
  for (let pass = 1; pass <= 20; pass++) {
    const found = await processesOfComputer(computerId, user);
    for (const pid of found) {
      const display = await xServerDisplay(pid);
      if (display !== undefined) displays.set(pid, display);
      try {
        process.kill(pid, "SIGKILL");
        signalled++;
      } catch {
        // Already gone.
      }
    }
    if (found.length === 0 && pass >= 3) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (const [pid, display] of displays) await removeXServerLeftovers(pid, display);
  return signalled;
}

/** The display number an X server process serves (`Xvfb :N ...`), else undefined. */
async function xServerDisplay(pid: number): Promise<number | undefined> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
  if (basename(argv[0] ?? "") !== "Xvfb") return undefined;
  const match = /^:(\d+)$/.exec(argv[1] ?? "");
  return match ? Number(match[1]) : undefined;
}

/**
 * An X server killed with SIGKILL leaves its lock file and socket in /tmp.
 * In a sticky /tmp only their owner may remove them, so another user's X
 * server could never take the display again (Xvfb: "Could not create
 * server lock file"). Removed here while the lock still names the killed
 * server, never another's.
 */
async function removeXServerLeftovers(pid: number, display: number): Promise<void> {
  const lock = `/tmp/.X${display}-lock`;
  const holder = Number((await readFile(lock, "utf8").catch(() => "")).trim());
  if (holder !== pid) return;
  await rm(`/tmp/.X11-unix/X${display}`, { force: true });
  await rm(lock, { force: true });
}

/** Whether the NUL-separated `environ` holds exactly `entry` as one of its variables. */
function hasEntry(environ: Buffer, entry: Buffer): boolean {
  let start = 0;
  while (start < environ.length) {
    let end = environ.indexOf(0, start);
    if (end === -1) end = environ.length;
    if (end - start === entry.length && environ.subarray(start, end).equals(entry)) return true;
    start = end + 1;
  }
  return false;
}
