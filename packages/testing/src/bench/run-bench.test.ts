import { describe, expect, it } from "vitest";
import { median, runBench } from "./run-bench.js";

describe("runBench", () => {
  it("reports medians of interleaved runs and their ratio after a warm-up", async () => {
    const calls: string[] = [];
    const sleepLogged = (mark: string, ms: number) => {
      calls.push(mark);
      return new Promise((resolve) => setTimeout(resolve, ms));
    };
    const lines: string[] = [];
    const figures = await runBench(
      "test",
      [
        {
          name: "sleepy",
          unit: "ms",
          subject: { label: "ours", run: () => sleepLogged("s", 20) },
          baseline: { label: "ref", run: () => sleepLogged("b", 5) },
        },
      ],
      { warmup: 1, runs: 3, write: (line) => lines.push(line) },
    );
    expect(calls).toEqual(["s", "b", "s", "b", "b", "s", "s", "b"]);
    const [figure] = figures;
    expect(figure?.subject.samples).toHaveLength(3);
    expect(figure?.ratio).toBeGreaterThan(1.5);
    expect(figure?.higherIsBetter).toBe(false);
    expect(lines[1]).toMatch(/^sleepy: ours \S+ ms \| ref \S+ ms \| ratio \S+ \(lower is better\)$/);
  });

  it("calls each side's after hook after every run, outside the timing", async () => {
    const calls: string[] = [];
    const [figure] = await runBench(
      "t",
      [
        {
          name: "after",
          unit: "ms",
          subject: {
            label: "ours",
            run: () => calls.push("s"),
            after: () => new Promise((resolve) => setTimeout(() => resolve(calls.push("s-after")), 60)),
          },
          baseline: {
            label: "ref",
            run: () => new Promise((resolve) => setTimeout(() => resolve(calls.push("b")), 30)),
          },
        },
      ],
      { warmup: 1, runs: 2, write: () => {} },
    );
    expect(calls).toEqual(["s", "s-after", "b", "s", "s-after", "b", "b", "s", "s-after"]);
    expect(figure?.subject.median).toBeLessThan(20);
    expect(figure?.ratio).toBeLessThan(0.7);
  });

  it("turns work per run into throughput", async () => {
    const [figure] = await runBench(
      "t",
      [
        {
          name: "mb",
          unit: "MB/s",
          work: 10e6,
          subject: { label: "a", run: () => {} },
          baseline: { label: "b", run: () => {} },
        },
      ],
      { warmup: 0, runs: 1, write: () => {} },
    );
    expect(figure?.subject.median).toBeGreaterThan(10);
    expect(figure?.higherIsBetter).toBe(true);
  });

  it("refuses a run count below one", async () => {
    await expect(runBench("t", [], { runs: 0, write: () => {} })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("takes the middle value", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});
