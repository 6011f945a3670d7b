#!/usr/bin/env node
// Per-file durations of a vitest run, as the table docs/testing.md keeps.
//
//   npx vitest run --reporter=default --reporter=json --outputFile.json=durations.json
//   node scripts/test-durations.mjs durations.json [--top N] [--cpu cpu.log] [--write test/durations.json]
//   node scripts/test-durations.mjs durations.json --failures
//
// --failures prints only the failed tests, each with the head of its
// error: .ci/run prints them last, where a reader of a cut CI log (its
// tail) still finds which test failed.
//
// Prints one markdown row per test file, slowest first: its wall time
// (start of its first test or hook to its end, as vitest's JSON reporter
// stamps it), its tests, and the run's sum against its wall time. With
// --cpu, a log of "<epoch ms> <busy fraction of all cores>" lines (one
// every few seconds, as a sampler of /proc/stat writes) adds the machine's
// mean CPU use while each file ran: a file that waits shows a low figure
// when it ran alone. --write records each file's seconds and cores (busy
// fraction times the machine's cores) where test/support/planned-sequencer.ts
// reads them: measure with `bash scripts/measure-tests.sh`, which runs the
// files one at a time so the machine's CPU use is each file's own.
import { readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { relative } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: "string" },
    cpu: { type: "string" },
    write: { type: "string" },
    failures: { type: "boolean" },
  },
});
const [file] = positionals;
if (!file) {
  console.error("Usage: node scripts/test-durations.mjs <vitest JSON report> [--top N] [--cpu cpu.log]");
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, "utf8"));
if (values.failures) {
  printFailures(report);
  process.exit(0);
}
const files = report.testResults.map((result) => ({
  name: relative(process.cwd(), result.name),
  ms: result.endTime - result.startTime,
  start: result.startTime,
  end: result.endTime,
  tests: result.assertionResults.length,
  passed: result.assertionResults.filter((a) => a.status === "passed").length,
  status: result.status,
}));
if (files.length === 0 || files.some((f) => !(f.ms >= 0))) {
  console.error(`${file}: no per-file start and end times to read`);
  process.exit(1);
}
const samples = values.cpu
  ? readFileSync(values.cpu, "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split(" ").map(Number))
  : [];
const cpuDuring = (start, end) => {
  const inside = samples.filter(([t]) => t >= start && t <= end + 2000);
  return inside.length === 0 ? undefined : inside.reduce((sum, [, busy]) => sum + busy, 0) / inside.length;
};
if (values.write) {
  if (samples.length === 0) {
    console.error("--write needs --cpu: the planner needs each file's cores as well as its seconds");
    process.exit(2);
  }
  const record = {};
  for (const f of [...files].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const busy = cpuDuring(f.start, f.end);
    if (busy === undefined || busy === 0) {
      console.error(`${f.name}: no CPU sample while it ran; a figure of 0 would mislead the planner`);
      process.exit(1);
    }
    record[f.name] = {
      seconds: Math.round(f.ms / 100) / 10,
      cores: Math.round(busy * availableParallelism() * 100) / 100,
    };
  }
  writeFileSync(values.write, `${JSON.stringify(record, null, 2)}\n`);
}
files.sort((a, b) => b.ms - a.ms);
const top = values.top ? files.slice(0, Number(values.top)) : files;
const s = (ms) => (ms / 1000).toFixed(1);
console.log(`| file | s | tests | passed${samples.length ? " | CPU busy" : ""} |`);
console.log(`| --- | ---: | ---: | ---:${samples.length ? " | ---:" : ""} |`);
for (const f of top) {
  const cpu = cpuDuring(f.start, f.end);
  const cpuCell = samples.length ? ` | ${cpu === undefined ? "-" : `${Math.round(cpu * 100)}%`}` : "";
  console.log(`| ${f.name} | ${s(f.ms)} | ${f.tests} | ${f.passed}${cpuCell} |`);
}
const sum = files.reduce((total, f) => total + f.ms, 0);
const wall = Math.max(...files.map((f) => f.end)) - Math.min(...files.map((f) => f.start));
console.log(
  `\n${files.length} files, ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped; files' own time ${s(sum)} s, wall ${s(wall)} s (${(sum / wall).toFixed(2)} files at once on average)`,
);

function printFailures(report) {
  const failed = report.testResults.flatMap((result) => {
    const tests = result.assertionResults.filter((a) => a.status === "failed");
    const name = relative(process.cwd(), result.name);
    // A file that failed outside any test (an import, a hook) has no failed test.
    if (tests.length === 0 && result.status === "failed")
      return [{ name, title: "(the file itself)", messages: [result.message ?? ""] }];
    return tests.map((a) => ({ name, title: a.fullName, messages: a.failureMessages ?? [] }));
  });
  if (failed.length === 0) return;
  console.log(`\nFailed tests (${failed.length}):`);
  for (const f of failed) {
    console.log(`  ${f.name}: ${f.title}`);
    const head = f.messages.join("\n").split("\n").slice(0, 12);
    for (const line of head) console.log(`      ${line}`);
  }
}
