import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** What one file took when it ran alone (test/durations.json): wall seconds and the cores it kept busy. */
interface FileCost {
  readonly seconds: number;
  readonly cores: number;
}

/** A file missing from the record (a new one): planned as a short file that keeps one core busy. */
const UNKNOWN: FileCost = { seconds: 10, cores: 1 };

/**
 * Orders the test files so that side by side they keep this machine's
 * cores busy without starving each other (docs/testing.md, "Side by
 * side"). vitest's pool starts the next file in this order whenever a
 * worker is free; this sequencer simulates that pool with each file's
 * recorded cost and, at each start, picks the longest file whose cores
 * still fit beside the running ones, else the lightest one (a worker
 * never idles). So the slow files start early and two CPU-bound files
 * (crash loops, round trips) rarely run at once.
 */
export default class PlannedSequencer extends BaseSequencer {
  private readonly costs: Record<string, FileCost> = JSON.parse(
    readFileSync(new URL("../durations.json", import.meta.url), "utf8"),
  );

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const groups = new Map<number, TestSpecification[]>();
    for (const spec of files) {
      const order = spec.project.config.sequence.groupOrder;
      groups.set(order, [...(groups.get(order) ?? []), spec]);
    }
    return [...groups.keys()]
      .sort((a, b) => a - b)
      .flatMap((order) => {
        const group = groups.get(order) ?? [];
        const workers = Number(group[0]?.project.config.maxWorkers ?? 1);
        return planStarts(
          group.map((spec) => ({ spec, cost: this.costOf(spec) })),
          workers,
          availableParallelism(),
        );
      });
  }

  private costOf(spec: TestSpecification): FileCost {
    return this.costs[relative(this.ctx.config.root, spec.moduleId)] ?? UNKNOWN;
  }
}

/** The order in which `workers` workers, each taking the next file when free, run the files best on `cores` cores. */
export function planStarts<T>(files: { spec: T; cost: FileCost }[], workers: number, cores: number): T[] {
  const waiting = [...files].sort((a, b) => b.cost.seconds - a.cost.seconds);
  let running: { endsAt: number; cores: number }[] = [];
  let now = 0;
  const starts: T[] = [];
  while (waiting.length > 0) {
    while (running.length < workers && waiting.length > 0) {
      const load = running.reduce((sum, file) => sum + file.cores, 0);
      let index = waiting.findIndex((file) => load + file.cost.cores <= cores);
      if (index < 0) index = lightest(waiting);
      const [next] = waiting.splice(index, 1);
      if (!next) break;
      starts.push(next.spec);
      running.push({ endsAt: now + next.cost.seconds, cores: next.cost.cores });
    }
    now = Math.min(...running.map((file) => file.endsAt));
    running = running.filter((file) => file.endsAt > now);
  }
  return starts;
}

function lightest(files: { cost: FileCost }[]): number {
  let best = 0;
  files.forEach((file, index) => {
    if (file.cost.cores < (files[best]?.cost.cores ?? Number.POSITIVE_INFINITY)) best = index;
  });
  return best;
}
