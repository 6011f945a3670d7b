#!/usr/bin/env node
// Builds every workspace package, two at a time where their dependencies
// allow (a build is one tsup: esbuild, then the declaration files, which
// keep one core busy; CI's machine has two). The root package.json's
// workspace order is the order a one-at-a-time build works in, so a
// package waits for each workspace package earlier in that order that it
// names in any of its dependency lists; nothing it names later was built
// before it in the one-at-a-time order either.
//
//   node scripts/build-packages.mjs [--jobs N]
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { jobs: { type: "string" } } });
const jobs = Math.max(1, Number(values.jobs ?? availableParallelism()));
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

// "examples/*" stands for each folder there with a package.json, in name order.
const folders = readJson("package.json").workspaces.flatMap((entry) =>
  entry.endsWith("/*")
    ? readdirSync(entry.slice(0, -2))
        .sort()
        .map((name) => join(entry.slice(0, -2), name))
        .filter((folder) => existsSync(join(folder, "package.json")))
    : [entry],
);
const packages = folders
  .map((folder) => ({ folder, manifest: readJson(join(folder, "package.json")) }))
  .filter(({ manifest }) => manifest.scripts?.build);
const order = packages.map(({ manifest }) => manifest.name);
const waitsFor = new Map(
  packages.map(({ manifest }, index) => {
    const named = Object.keys({
      ...manifest.dependencies,
      ...manifest.devDependencies,
      ...manifest.peerDependencies,
      ...manifest.optionalDependencies,
    });
    return [manifest.name, new Set(named.filter((name) => order.indexOf(name) >= 0 && order.indexOf(name) < index))];
  }),
);

const done = new Set();
const running = new Map();
const started = Date.now();

function build({ folder, manifest }) {
  return new Promise((resolve, reject) => {
    const began = Date.now();
    const child = spawn("npm", ["run", "build", "--silent"], { cwd: folder, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) {
        process.stderr.write(output);
        reject(new Error(`${manifest.name}: the build exited with ${code}`));
        return;
      }
      console.log(`built ${manifest.name} (${((Date.now() - began) / 1000).toFixed(1)} s)`);
      resolve();
    });
  });
}

async function main() {
  const waiting = [...packages];
  while (waiting.length > 0 || running.size > 0) {
    while (running.size < jobs) {
      const index = waiting.findIndex(({ manifest }) =>
        [...(waitsFor.get(manifest.name) ?? [])].every((name) => done.has(name)),
      );
      if (index < 0) break;
      const [next] = waiting.splice(index, 1);
      running.set(
        next.manifest.name,
        build(next).then(() => {
          running.delete(next.manifest.name);
          done.add(next.manifest.name);
        }),
      );
    }
    if (running.size === 0) throw new Error(`nothing can start: ${waiting.map((p) => p.manifest.name).join(", ")}`);
    await Promise.race(running.values());
  }
  if (!existsSync("packages/core/dist")) throw new Error("core's dist is missing after the build");
  console.log(`built ${done.size} packages in ${((Date.now() - started) / 1000).toFixed(1)} s, ${jobs} at a time`);
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
