import { performance } from "node:perf_hooks";

/** Runs one named stage of the quickstart and prints it with its duration. */
export async function stage<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  process.stdout.write(`- ${name} ... `);
  try {
    const result = await work();
    process.stdout.write(`done in ${Math.round(performance.now() - started)} ms\n`);
    return result;
  } catch (error) {
    process.stdout.write(`FAILED after ${Math.round(performance.now() - started)} ms\n`);
    throw error;
  }
}
