import { readdirSync } from "node:fs";
import type { Machine } from "@agent-computer/core";

/** This process's resident memory and open file descriptors, right now. */
export interface HostVitals {
  readonly rssBytes: number;
  /** V8's used heap: beside RSS it tells a JavaScript leak from native memory. */
  readonly heapUsedBytes: number;
  /** Entries of /proc/self/fd, less the one the listing itself opens; undefined off Linux. */
  readonly fds: number | undefined;
}

export function hostVitals(): HostVitals {
  let fds: number | undefined;
  try {
    fds = readdirSync("/proc/self/fd").length - 1;
  } catch {
    fds = undefined;
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rssBytes: rss, heapUsedBytes: heapUsed, fds };
}

/**
 * The computer's memory in bytes, read inside it through exec: the cgroup's
 * memory.current (the container's own accounting), else `free`'s used
 * column. Undefined when neither answers.
 */
export async function computerMemoryBytes(machine: Machine): Promise<number | undefined> {
  const result = await machine.exec({
    shell: "cat /sys/fs/cgroup/memory.current 2>/dev/null || free -b | awk '/^Mem:/ { print $3 }'",
    timeoutMs: 10_000,
  });
  const bytes = Number(new TextDecoder().decode(result.stdout).trim());
  return result.exitCode === 0 && Number.isFinite(bytes) && bytes > 0 ? bytes : undefined;
}
