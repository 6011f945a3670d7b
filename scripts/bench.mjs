#!/usr/bin/env node
// `npm run bench -- <name> [--runs N] [--warmup N]`: runs packages/*/bench/<name>.bench.ts
// through core's bench runner; where several packages have a benchmark of that
// name (lease: the memory, SQLite and PostgreSQL stores), all run in turn.
// Without a name, lists the benchmarks.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const benches = new Map();
for (const pkg of readdirSync(join(root, "packages"))) {
  const dir = join(root, "packages", pkg, "bench");
  if (!existsSync(dir)) continue;
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".bench.ts")) continue;
    const bench = file.slice(0, -".bench.ts".length);
    benches.set(bench, [...(benches.get(bench) ?? []), join(dir, file)]);
  }
}
const [name, ...rest] = process.argv.slice(2);
if (!name || !benches.has(name)) {
  if (name) console.error(`No benchmark named "${name}".`);
  console.error(
    `Usage: npm run bench -- <name> [--runs N] [--warmup N]\nBenchmarks: ${[...benches.keys()].sort().join(", ")}`,
  );
  process.exit(name ? 1 : 0);
}
const tsx = join(root, "node_modules", ".bin", "tsx");
let failed = 0;
for (const file of benches.get(name)) {
  const result = spawnSync(tsx, [file, ...rest], { stdio: "inherit" });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
