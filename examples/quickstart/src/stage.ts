import { performance } from "node:perf_hooks";

// The quickstart's report: a line per step, what happens during a step
// (events, activity, results) indented under it, every line stamped with
// the seconds since the run started.
const runStarted = performance.now();

function stamp(): string {
  return `${((performance.now() - runStarted) / 1000).toFixed(1).padStart(6)} s`;
}

/** Says once, first, what the times are. */
export function reportHeader(): void {
  console.log("Times are seconds since the quickstart started; each step's events are indented under it.\n");
}

/** A detail of the current step (an event, a tool's activity, a result), indented under it; each line of `text` stamped. */
export function note(text: string): void {
  for (const line of text.split("\n")) console.log(`${stamp()}      ${line.trimStart()}`);
}

/** Runs one named step of the quickstart: its line, what happens under it, then its duration. */
export async function stage<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  console.log(`${stamp()}  ${name}`);
  try {
    const result = await work();
    console.log(`${stamp()}    done in ${Math.round(performance.now() - started)} ms`);
    return result;
  } catch (error) {
    console.log(`${stamp()}    FAILED after ${Math.round(performance.now() - started)} ms`);
    throw error;
  }
}
