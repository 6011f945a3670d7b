#!/usr/bin/env node
// Packs every publishable package into one folder, to install them before
// the first release (README, "Install"): nothing is on the registry yet,
// and a package's @agent-computer/* dependencies resolve only when their
// tarballs are installed with it, in one `npm install`.
//
//   npm run pack-packages -- <folder> [--no-build]
//
// It builds first (only what changed: scripts/build-packages.mjs), then
// runs `npm pack` for each public workspace. --ignore-scripts: the
// packages' prepack would delete dist/ and build again.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  options: { "no-build": { type: "boolean" } },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  console.error("Usage: npm run pack-packages -- <folder> [--no-build]");
  process.exit(2);
}
const folder = resolve(process.env.INIT_CWD ?? process.cwd(), positionals[0]);

function run(command, args, capture = false) {
  const result = spawnSync(command, args, {
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
  });
  if (result.status !== 0) {
    console.error(`${command} ${args.join(" ")} exited with ${result.status ?? result.signal}`);
    process.exit(1);
  }
  return result.stdout;
}

const workspaces = JSON.parse(readFileSync("package.json", "utf8")).workspaces.filter((w) => !w.endsWith("/*"));
const publishable = workspaces.filter((w) => !JSON.parse(readFileSync(join(w, "package.json"), "utf8")).private);
if (!values["no-build"]) run(process.execPath, ["scripts/build-packages.mjs"]);
mkdirSync(folder, { recursive: true });
const packArgs = ["pack", "--ignore-scripts", "--json", "--pack-destination", folder];
const packed = JSON.parse(run("npm", [...packArgs, ...publishable.flatMap((w) => ["-w", w])], true));
for (const tarball of packed) console.log(`packed ${tarball.filename}`);
console.log(`\n${packed.length} packages in ${folder}. In your app, install them together:\n`);
console.log(`  npm install ${join(folder, "*.tgz")}\n`);
