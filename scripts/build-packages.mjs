#!/usr/bin/env node
// Builds every workspace package, two at a time where their dependencies
// allow (a build is one tsup: esbuild, then the declaration files, which
// keep one core busy; CI's machine has two). The root package.json's
// workspace order is the order a one-at-a-time build works in, so a
// package waits for each workspace package earlier in that order that it
// names in any of its dependency lists; nothing it names later was built
// before it in the one-at-a-time order either.
//
//
// A package whose inputs are as they were at its last build is not built
// again (`npm run demo` a second time starts in seconds): its fingerprint
// covers every file git sees in its folder (tracked or not, never ignored
// ones such as dist/), the root's tsconfig.base.json and package-lock.json,
// and the fingerprints of the workspace packages it waits for; it is kept
// in dist/.build-fingerprint, written after a build succeeds. --force
// builds every package; without git, every package is built.
//
// --no-types leaves out the declaration files (tsup.preset.ts BUILD_TYPES),
// most of a build's time: `npm test` builds so, since no test reads them.
// Such a build's fingerprint says so, and a later build with types (the
// typecheck's, the consumer test's) builds the package again.
//
//   node scripts/build-packages.mjs [--jobs N] [--force] [--no-types]
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { jobs: { type: "string" }, force: { type: "boolean" }, "no-types": { type: "boolean" } },
});
const withTypes = !values["no-types"];
/** What a build without declaration files adds to its fingerprint. */
const NO_TYPES = ":no-types";
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

/** The files git sees in a folder (tracked, or untracked and not ignored), sorted; undefined without git. */
function filesOf(folder) {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", folder], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (listed.status !== 0) return undefined;
  return [...new Set(listed.stdout.split("\0").filter((file) => file && existsSync(file)))].sort();
}

/** Each package's fingerprint, in the build order (so the ones it waits for are known first). */
function fingerprints() {
  const shared = ["tsconfig.base.json", "package-lock.json"].filter((file) => existsSync(file));
  const result = new Map();
  for (const { folder, manifest } of packages) {
    const files = filesOf(folder);
    if (!files) return new Map();
    const hash = createHash("sha256");
    for (const file of [...shared, ...files]) hash.update(`${file}\0`).update(readFileSync(file)).update("\0");
    for (const name of waitsFor.get(manifest.name) ?? []) hash.update(`${name}=${result.get(name)}\0`);
    result.set(manifest.name, hash.digest("hex"));
  }
  return result;
}

const fingerprintFile = (folder) => join(folder, "dist", ".build-fingerprint");
const wanted = fingerprints();
/** Current when built from the same inputs, and with types if this build wants them (one with types serves both). */
const upToDate = (p) => {
  if (values.force) return false;
  const file = fingerprintFile(p.folder);
  const fingerprint = wanted.get(p.manifest.name);
  if (!fingerprint || !existsSync(file)) return false;
  const built = readFileSync(file, "utf8");
  return built === fingerprint || (!withTypes && built === fingerprint + NO_TYPES);
};

const done = new Set();
const running = new Map();
const started = Date.now();

function build({ folder, manifest }) {
  return new Promise((resolve, reject) => {
    const began = Date.now();
    const env = { ...process.env, AGENT_COMPUTER_BUILD_TYPES: withTypes ? "1" : "0" };
    const child = spawn("npm", ["run", "build", "--silent"], { cwd: folder, env, stdio: ["ignore", "pipe", "pipe"] });
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
      const fingerprint = wanted.get(manifest.name);
      if (fingerprint && existsSync(join(folder, "dist")))
        writeFileSync(fingerprintFile(folder), withTypes ? fingerprint : fingerprint + NO_TYPES);
      console.log(`built ${manifest.name} (${((Date.now() - began) / 1000).toFixed(1)} s)`);
      resolve();
    });
  });
}

async function main() {
  const current = packages.filter(upToDate);
  for (const { manifest } of current) done.add(manifest.name);
  const waiting = packages.filter((p) => !current.includes(p));
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
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const unchanged = current.length > 0 ? ` (${current.length} unchanged since their last build)` : "";
  const types = withTypes ? "" : " without declaration files";
  console.log(`built ${done.size - current.length} packages${types} in ${seconds} s, ${jobs} at a time${unchanged}`);
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
