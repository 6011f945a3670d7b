import { performance } from "node:perf_hooks";
import { AgentComputerError } from "@agent-computer/core";
import type { BenchCase, BenchSide } from "./bench-case.js";

export interface BenchOptions {
  /** Runs before measuring, per side (default 1). */
  warmup?: number;
  /** Measured runs, per side; medians are reported (default 5). */
  runs?: number;
  /** Where the table goes (default: stdout). */
  write?: (line: string) => void;
}

export interface BenchFigure {
  readonly name: string;
  readonly unit: BenchCase["unit"];
  readonly subject: { readonly label: string; readonly median: number; readonly samples: number[] };
  readonly baseline: { readonly label: string; readonly median: number; readonly samples: number[] };
  /** subject median / baseline median. */
  readonly ratio: number;
  readonly higherIsBetter: boolean;
}

/**
 * Runs each case `warmup` + `runs` times, alternating subject and baseline
 * (and which goes first) so both see the same machine noise, and prints the
 * medians side by side with their ratio.
 */
export async function runBench(
  title: string,
  cases: readonly BenchCase[],
  options: BenchOptions = {},
): Promise<BenchFigure[]> {
  const warmup = options.warmup ?? 1;
  const runs = options.runs ?? 5;
  if (!Number.isInteger(runs) || runs < 1)
    throw new AgentComputerError("INVALID_ARGUMENT", 'Invalid BenchOptions: at "runs": expected an integer >= 1');
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  write(`# ${title} (warm-up ${warmup}, ${runs} runs, medians)`);
  const figures: BenchFigure[] = [];
  for (const benchCase of cases) {
    for (let i = 0; i < warmup; i++) {
      await timeOnce(benchCase.subject);
      await timeOnce(benchCase.baseline);
    }
    const subjectSamples: number[] = [];
    const baselineSamples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const order = i % 2 === 0 ? (["subject", "baseline"] as const) : (["baseline", "subject"] as const);
      for (const side of order) {
        const ms = await timeOnce(benchCase[side]);
        (side === "subject" ? subjectSamples : baselineSamples).push(figureOf(benchCase, ms));
      }
    }
    const figure = toFigure(benchCase, subjectSamples, baselineSamples);
    figures.push(figure);
    write(formatFigure(figure));
  }
  return figures;
}

async function timeOnce(side: BenchSide): Promise<number> {
  const start = performance.now();
  await side.run();
  const ms = performance.now() - start;
  await side.after?.();
  return ms;
}

function figureOf(benchCase: BenchCase, ms: number): number {
  if (benchCase.unit === "ms") return ms;
  const work = benchCase.work ?? 1;
  const perSecond = work / (ms / 1000);
  return benchCase.unit === "MB/s" ? perSecond / 1e6 : perSecond;
}

function toFigure(benchCase: BenchCase, subject: number[], baseline: number[]): BenchFigure {
  const s = median(subject);
  const b = median(baseline);
  return {
    name: benchCase.name,
    unit: benchCase.unit,
    subject: { label: benchCase.subject.label, median: s, samples: subject },
    baseline: { label: benchCase.baseline.label, median: b, samples: baseline },
    ratio: b === 0 ? Number.NaN : s / b,
    higherIsBetter: benchCase.unit !== "ms",
  };
}

/** The middle value (mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function formatFigure(f: BenchFigure): string {
  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toPrecision(3));
  const better = f.higherIsBetter ? "higher is better" : "lower is better";
  return `${f.name}: ${f.subject.label} ${fmt(f.subject.median)} ${f.unit} | ${f.baseline.label} ${fmt(f.baseline.median)} ${f.unit} | ratio ${f.ratio.toFixed(3)} (${better})`;
}

/** Reads `--runs N` and `--warmup N` from a benchmark script's argv. */
export function benchOptionsFromArgv(argv: readonly string[] = process.argv.slice(2)): BenchOptions {
  const options: BenchOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const value = Number(argv[i + 1]);
    if (argv[i] === "--runs") options.runs = value;
    if (argv[i] === "--warmup") options.warmup = value;
  }
  return options;
}
