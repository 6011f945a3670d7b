import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/**
 * Where compiled child scripts go: under the root's node_modules, so the
 * imports left in them (every package, the workspace's own among them)
 * resolve as they do from the scripts' own folders (all dependencies are
 * hoisted to the root).
 */
const OUT_DIR = fileURLToPath(new URL("../../node_modules/.cache/agent-computer-test-children/", import.meta.url));

const compiled = new Map<string, Promise<string>>();

/**
 * A TypeScript child script (a worker, a process a test kills) compiled
 * once per test file into one plain ES module, so each child starts with
 * plain `node` rather than `node --import tsx`: tsx's loader doubled a
 * child's start-up (about 1.5 against 0.75 core-seconds), and the kill
 * loops start a hundred children (docs/testing.md, "Where the time goes").
 * The script's relative imports are bundled in; packages stay imports. The
 * process is still node itself, so a SIGKILL hits the script.
 */
export function compiledScript(entry: string): Promise<string> {
  let out = compiled.get(entry);
  if (!out) {
    out = compile(entry);
    compiled.set(entry, out);
  }
  return out;
}

async function compile(entry: string): Promise<string> {
  await mkdir(OUT_DIR, { recursive: true });
  await removeStale();
  // One name per compile: test files in other workers compile the same script at once.
  const outfile = join(OUT_DIR, `${basename(entry, ".ts")}-${randomBytes(6).toString("hex")}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "inline",
    logLevel: "silent",
  });
  // A worker vitest ends with a signal has no exit event: removeStale takes those later.
  process.once("exit", () => rmSync(outfile, { force: true }));
  return outfile;
}

/** Removes compiled scripts older than a day (left by processes that ended without their exit event). */
async function removeStale(): Promise<void> {
  const dayAgo = Date.now() - 24 * 3600_000;
  for (const name of await readdir(OUT_DIR)) {
    const file = join(OUT_DIR, name);
    const { mtimeMs } = await stat(file).catch(() => ({ mtimeMs: Date.now() }));
    if (mtimeMs < dayAgo) await rm(file, { force: true });
  }
}
