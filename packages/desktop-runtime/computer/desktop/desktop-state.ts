import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DESKTOP_STATE_ENV } from "../../src/desktop/display-apart-policy.js";
import { CliError } from "./cli-error.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { identify, isAlive, sleep } from "./process-status.js";

/** The computer's desktop state folder: DESKTOP_STATE_ENV, or one in /tmp. */
export const desktopStateDir = () => process.env[DESKTOP_STATE_ENV] ?? "/tmp/agent-computer-desktops";

/**
 * The state folder holds the slots' records, the gateway's keys and the X
 * cookie: it must be this user's own and closed to everyone else. In a
 * shared /tmp another user (a bot's, where the display is a second user)
 * could make the folder first and read or plant what the display keeps.
 */
function refuseForeignFolder(dir: string): void {
  const folder = lstatSync(dir);
  const uid = process.getuid?.();
  if (!folder.isDirectory() || (uid !== undefined && folder.uid !== uid) || (folder.mode & 0o077) !== 0) {
    throw new CliError(
      "UNAVAILABLE",
      `The desktop state folder ${dir} is not this user's own (owner ${folder.uid}, mode ${(folder.mode & 0o7777).toString(8)}); remove it or point ${DESKTOP_STATE_ENV} elsewhere.`,
    );
  }
}

/** Display numbers start here, away from the :0-:99 a person or another tool may use. */
export const FIRST_DISPLAY = 100;
/** Chromium's DevTools port for slot n is this plus n. */
export const FIRST_CDP_PORT = 9300;
/** Far more than any computer can hold (each desktop needs a few hundred MB). */
const MAX_SLOTS = 64;

/**
 * The computer's desktop bookkeeping: one JSON file per reserved slot under
 * a state folder outside the home (it describes processes, which do not
 * survive the machine), and a lock so concurrent `desktop` commands see
 * and change slots one at a time.
 */
export class DesktopState {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    refuseForeignFolder(dir);
  }

  slotDir(slot: number): string {
    return join(this.dir, `slot-${slot}`);
  }

  records(): DisplaySlotRecord[] {
    const out: DisplaySlotRecord[] = [];
    for (const name of readdirSync(this.dir)) {
      const match = /^slot-(\d+)\.json$/.exec(name);
      if (!match) continue;
      try {
        out.push(JSON.parse(readFileSync(join(this.dir, name), "utf8")) as DisplaySlotRecord);
      } catch {
        // A half-written record cannot happen (writes rename into place); skip anything foreign.
      }
    }
    return out.sort((a, b) => a.slot - b.slot);
  }

  recordOf(bot: string): DisplaySlotRecord | undefined {
    return this.records().find((r) => r.bot === bot);
  }

  save(record: DisplaySlotRecord): void {
    const file = join(this.dir, `slot-${record.slot}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  /** Frees a slot: only called once its processes are gone. */
  release(record: DisplaySlotRecord): void {
    rmSync(join(this.dir, `slot-${record.slot}.json`), { force: true });
  }

  /** The lowest slot no record holds and no foreign X server uses. */
  freeSlot(): number {
    const taken = new Set(this.records().map((r) => r.slot));
    for (let slot = 0; slot < MAX_SLOTS; slot++) {
      if (taken.has(slot)) continue;
      if (foreignXServer(FIRST_DISPLAY + slot)) continue;
      return slot;
    }
    throw new CliError("LIMIT_EXCEEDED", `All ${MAX_SLOTS} display slots are in use.`);
  }

  /**
   * Runs `work` holding the computer's desktop lock: a directory made
   * atomically, owned by a live process. A lock whose owner died (a killed
   * command) is taken over, so a crash never wedges the computer.
   */
  async locked<T>(work: () => Promise<T> | T, timeoutMs = 30_000): Promise<T> {
    const lock = join(this.dir, "lock");
    const until = Date.now() + timeoutMs;
    for (;;) {
      try {
        mkdirSync(lock);
        writeFileSync(join(lock, "owner"), JSON.stringify(identify(process.pid)));
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        this.breakStaleLock(lock);
        if (Date.now() > until) {
          throw new CliError("UNAVAILABLE", "Another desktop command holds the computer's desktop lock; try again.");
        }
        await sleep(25);
      }
    }
    try {
      return await work();
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }

  private breakStaleLock(lock: string): void {
    let owner: ReturnType<typeof identify>;
    try {
      owner = JSON.parse(readFileSync(join(lock, "owner"), "utf8"));
    } catch {
      // The owner is between mkdir and writing its name; give it a moment.
      try {
        const age = Date.now() - statMtime(lock);
        if (age < 2000) return;
      } catch {
        return;
      }
    }
    if (owner && isAlive(owner)) return;
    // Rename first: only one of several waiters wins the stale lock's removal.
    const grave = `${lock}.stale-${process.pid}-${Date.now()}`;
    try {
      renameSync(lock, grave);
      rmSync(grave, { recursive: true, force: true });
    } catch {
      // Someone else broke it first.
    }
  }
}

function statMtime(path: string): number {
  return statSync(path).mtimeMs;
}

/** An X server we did not start holds this display. */
function foreignXServer(display: number): boolean {
  return xServerHolding(display) !== undefined;
}

/**
 * The live X server whose pid this display's lock names, if any. A lock
 * left by a machine that stopped names a pid the restarted machine may
 * have given to another program, or to a zombie: X itself takes any pid
 * that answers a signal (a zombie does) as the holder and refuses the
 * display ("Server is already active"), so a live non-X process does not
 * count as a holder here (issue 47: a resumed Docker computer's desktop
 * failed so on display 101).
 */
function xServerHolding(display: number): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(`/tmp/.X${display}-lock`, "utf8").trim(), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || identify(pid) === undefined) return undefined;
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("X") ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Before an X server starts on a display this computer holds: a lock and a
 * socket no live X server answers for are left from before a stop, and are
 * removed so the server does not refuse the display. A live X server's are
 * kept (starting it fails then, with its own message).
 */
export function clearStaleXLock(display: number): void {
  if (xServerHolding(display) !== undefined) return;
  rmSync(`/tmp/.X${display}-lock`, { force: true });
  rmSync(`/tmp/.X11-unix/X${display}`, { force: true });
}
