#!/usr/bin/env node
// `npm run soak -- <fake|docker> --minutes N [options]`: runs the soak
// harness, examples/soak/src/main.ts, with tsx, as scripts/bench.mjs runs
// benchmarks. `npm run soak -- --help` lists the options.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const tsx = join(root, "node_modules", ".bin", "tsx");
const result = spawnSync(tsx, [join(root, "examples", "soak", "src", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
if (result.error) console.error(result.error.message);
process.exit(result.status ?? 1);
