#!/usr/bin/env node
// `npm run soak -- <fake|docker> --minutes N [options]`: runs the soak
// harness, examples/soak/src/main.ts, with tsx, as scripts/bench.mjs runs
// benchmarks. `npm run soak -- --help` lists the options. SIGINT and
// SIGTERM are passed on: the harness then stops after the bots' current
// steps and still cleans up its computers.
import { spawn } from "node:child_process";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const tsx = join(root, "node_modules", ".bin", "tsx");
const child = spawn(tsx, ["--expose-gc", join(root, "examples", "soak", "src", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("error", (error) => {
  console.error(error.message);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
