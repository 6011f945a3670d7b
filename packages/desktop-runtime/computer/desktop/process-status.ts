import { readdirSync, readFileSync } from "node:fs";

/** A process we started, named by pid and kernel start time so a reused pid is never mistaken for it. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: string;
}

/** The start time field of /proc/<pid>/stat, or undefined when the process is gone. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Field 22 of stat is the start time; fields[0] here is field 3 (state).
    if (fields[0] === "Z") return undefined; // a zombie is as good as gone
    return fields[19];
  } catch {
    return undefined;
  }
}

export function identify(pid: number): ProcessIdentity | undefined {
  const startTime = startTimeOf(pid);
  return startTime === undefined ? undefined : { pid, startTime };
}

export function isAlive(p: ProcessIdentity | undefined): boolean {
  return p !== undefined && startTimeOf(p.pid) === p.startTime;
}

export function signal(p: ProcessIdentity | undefined, sig: NodeJS.Signals): void {
  if (!isAlive(p)) return;
  try {
    process.kill((p as ProcessIdentity).pid, sig);
  } catch {
    // Gone between the check and the signal: nothing to do.
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until none of `processes` is alive, up to `ms`; true when they all went. */
export async function waitGone(processes: (ProcessIdentity | undefined)[], ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (!processes.some(isAlive)) return true;
    if (Date.now() >= until) return false;
    await sleep(50);
  }
}

/**
 * Every live descendant of `root` (children, their children, ...), each by
 * its identity, so one that exits and whose pid is reused is not waited on.
 */
export function descendantsOf(root: ProcessIdentity | undefined): ProcessIdentity[] {
  if (!isAlive(root)) return [];
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // Field 4 (ppid) follows the state, after the command name's closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // Gone while we looked.
    }
  }
  const found: ProcessIdentity[] = [];
  const queue = [...(children.get((root as ProcessIdentity).pid) ?? [])];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    const identity = identify(pid);
    if (!identity) continue;
    found.push(identity);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}
