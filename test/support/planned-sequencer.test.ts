import { describe, expect, it } from "vitest";
import { planStarts } from "./planned-sequencer.js";

// The order the test run starts files in (vitest.config.ts): slow files
// first, and never two CPU-bound files at once while lighter ones wait.
const file = (spec: string, seconds: number, cores: number) => ({ spec, cost: { seconds, cores } });

describe("planStarts", () => {
  it("starts the longest files first when they fit beside each other", () => {
    const order = planStarts([file("a", 5, 0.5), file("b", 50, 0.5), file("c", 20, 0.5)], 3, 2);
    expect(order).toEqual(["b", "c", "a"]);
  });

  it("keeps a second CPU-bound file back while a lighter one fits beside the first", () => {
    const order = planStarts(
      [file("crash-a", 90, 1.8), file("crash-b", 60, 1.8), file("wait-1", 30, 0.2), file("wait-2", 30, 0.2)],
      2,
      2,
    );
    expect(order.slice(0, 2)).toEqual(["crash-a", "wait-1"]);
    // crash-b starts only when wait-2 could not fit either: after wait-1 ends, wait-2 goes next.
    expect(order).toEqual(["crash-a", "wait-1", "wait-2", "crash-b"]);
  });

  it("never leaves a worker idle: with nothing that fits it takes the lightest file", () => {
    const order = planStarts([file("heavy", 90, 1.9), file("mid", 40, 1.5), file("less", 30, 1.2)], 2, 2);
    expect(order).toEqual(["heavy", "less", "mid"]);
  });

  it("keeps every file exactly once", () => {
    const files = Array.from({ length: 40 }, (_, i) => file(`f${i}`, (i * 7) % 13, (i % 5) * 0.4));
    const order = planStarts(files, 3, 2);
    expect([...order].sort()).toEqual(files.map((f) => f.spec).sort());
  });
});
