#!/usr/bin/env node
// The consumer test: the packages as a user gets them from the registry.
//
//   node test/consumer/run.mjs [--no-build] [--keep]
//
// It builds the tree (skipped with --no-build, as .ci/run does right after
// `npm test` built it), checks that every built package is publishable,
// packs each one with `npm pack` into a folder under os.tmpdir(), makes a
// new project there, outside the workspace, and installs the tarballs with
// npm (dependencies come from the registry, as for a user). There it
// typechecks the programs of test/consumer/project/ against the .d.ts (ESM)
// and .d.cts (CJS) types, checks with skipLibCheck off that our declaration
// files resolve every module they import, and runs, in ESM and in CJS:
// every entry point of every package; errors recognised across entries,
// bundles and a second installed copy of core; runtime's README example;
// screens' page server; core's README example (the provider conformance
// suite on the fake provider, with vitest); and, on the real Docker engine,
// provider-docker's README example. When CI is set a missing engine fails
// the test; otherwise those steps are skipped with the reason.
//
// Why a script and not a vitest file of the root run: it rebuilds and packs
// the packages that the other suites import while they run, and its own
// vitest run belongs to the consumer project, not to this workspace.
//
// better-sqlite3's native binding: a user's install downloads it prebuilt
// (prebuild-install, from the package's GitHub release). That host is not
// reachable from CI, and compiling SQLite again took two of the test's
// three minutes, so the install is handed the binding `npm ci` built for
// the workspace (same version, same Node ABI) through prebuild-install's
// own local-prebuilds option (localPrebuild in prebuild-install's util.js):
// the prebuilt path a user takes, fed from this machine.
//
// Packing uses --ignore-scripts: the packages' prepack (`rm -rf dist &&
// tsup`) is the same build, plus deleting dist/, which would pull the files
// from under anything else running from this tree. On a clean clone (CI)
// the result is the same tarball.
import { spawn, spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { readmeInstall } from "./readme-install.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const options = new Set(process.argv.slice(2));
for (const option of options) {
  if (option !== "--no-build" && option !== "--keep") {
    console.error(`Unknown option ${option}. Usage: node test/consumer/run.mjs [--no-build] [--keep]`);
    process.exit(2);
  }
}
const ci = Boolean(process.env.CI);
const timings = [];
const failures = [];
const started = performance.now();

/**
 * A prebuild-install archive of the workspace's better-sqlite3 binding, named
 * as prebuild-install names the download it looks for; returns its folder.
 */
async function prebuiltSqliteBinding(work) {
  const module = join(repo, "node_modules", "better-sqlite3");
  const { version } = await readJson(join(module, "package.json"));
  const folder = join(work, "prebuilds");
  await mkdir(folder);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  run("tar", ["-czf", join(folder, name), "-C", module, "build/Release/better_sqlite3.node"]);
  return folder;
}

/** Runs a command, its output shown; throws with the command line when it fails. */
function run(command, args, { cwd = repo, timeoutMs = 10 * 60_000, capture = false, env = process.env } = {}) {
  const result = spawnSync(command, args, {
    cwd,
    env,
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    encoding: "utf8",
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw new Error(`${command} ${args.join(" ")}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} (in ${cwd}) exited with ${result.status}`);
  return result.stdout;
}

/** A step the later ones need: its failure ends the test. */
async function stage(name, work) {
  console.log(`\n== ${name}`);
  const t0 = performance.now();
  const value = await work();
  const seconds = (performance.now() - t0) / 1000;
  timings.push([name, seconds]);
  console.log(`   ${seconds.toFixed(1)} s`);
  return value;
}

/** A check no later step needs: a failure is reported at the end, after the others ran. True when it passed. */
async function check(name, work) {
  try {
    await stage(name, work);
    return true;
  } catch (error) {
    failures.push(`${name}: ${error.message}`);
    console.log(`   FAILED: ${error.message}`);
    return false;
  }
}

const readJson = async (file) => JSON.parse(await readFile(file, "utf8"));

/**
 * The installed MCP server's bin as a client starts it: `--help` answers,
 * and over stdio it answers `initialize` and lists its tools.
 */
async function mcpBinHandshake(bin, cwd) {
  const help = spawnSync(bin, ["--help"], { cwd, encoding: "utf8", timeout: 60_000 });
  if (help.status !== 0 || !help.stdout.includes("SANDBOX_PROVIDER")) {
    throw new Error(`--help exited ${help.status}: ${help.stderr}`);
  }
  const child = spawn(bin, [], {
    cwd,
    env: { ...process.env, SANDBOX_PROVIDER: "fake", AGENT_COMPUTER_DATA_DIR: join(cwd, "mcp-data") },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const answers = new Map();
  let buffered = "";
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const message = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined) answers.set(message.id, message);
    }
  });
  const send = (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  const answer = async (id) => {
    for (let waited = 0; !answers.has(id); waited += 100) {
      if (waited > 60_000 || child.exitCode !== null) throw new Error(`no answer to request ${id}; stderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return answers.get(id);
  };
  try {
    send({
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "consumer", version: "0" } },
    });
    const init = await answer(1);
    if (init.result?.serverInfo?.name !== "agent-computer") throw new Error(`initialize: ${JSON.stringify(init)}`);
    send({ method: "notifications/initialized" });
    send({ id: 2, method: "tools/list" });
    const names = (await answer(2)).result?.tools?.map((t) => t.name) ?? [];
    if (!names.includes("shell")) throw new Error(`tools/list: ${JSON.stringify(names)}`);
    console.log(`   ${init.result.serverInfo.name}: ${names.length} tools (${names.slice(0, 4).join(", ")}, ...)`);
  } finally {
    child.kill("SIGTERM");
  }
}

/** What is wrong with a publishable package's manifest, given its tarball's files. */
function manifestProblems(manifest, root, files) {
  const problems = [];
  const shipped = new Set(files);
  const ships = (target, what) => {
    const path = target.replace(/^\.\//, "");
    if (!shipped.has(path)) problems.push(`${what} ${target} is not in the tarball`);
  };
  if (manifest.publishConfig?.access !== "public") problems.push('publishConfig.access is not "public"');
  if (manifest.license !== root.license) problems.push(`license ${manifest.license} is not the tree's ${root.license}`);
  // Nothing is published yet and the project has no public repository: a URL would be a guess (README, "Install").
  if (manifest.repository !== undefined) problems.push("repository names a URL the project does not have yet");
  if (!shipped.has("LICENSE")) problems.push("LICENSE is not in the tarball");
  if (!manifest.files?.includes("dist")) problems.push("files does not list dist");
  for (const field of ["main", "module", "types"]) {
    if (manifest[field]) ships(manifest[field], field);
    else problems.push(`no ${field}`);
  }
  for (const [name, target] of Object.entries(manifest.bin ?? {})) ships(target, `bin ${name}`);
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (typeof target === "string") {
      ships(target, `exports["${subpath}"]`);
      continue;
    }
    if (!target.import) problems.push(`exports["${subpath}"] has no import condition`);
    for (const [condition, declaration] of [
      ["import", ".d.ts"],
      ["require", ".d.cts"],
    ]) {
      const entry = target[condition];
      if (!entry) continue;
      if (!entry.types?.endsWith(declaration))
        problems.push(`exports["${subpath}"].${condition} has no ${declaration}`);
      else ships(entry.types, `exports["${subpath}"].${condition}.types`);
      if (entry.default) ships(entry.default, `exports["${subpath}"].${condition}.default`);
      else problems.push(`exports["${subpath}"].${condition} has no default`);
    }
  }
  return problems;
}

/** "dist/ (14), image/ (9), README.md, package.json" */
function contentsOf(files) {
  const groups = new Map();
  for (const file of files) {
    const [top, ...rest] = file.split("/");
    const key = rest.length === 0 ? top : `${top}/`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  return [...groups].map(([key, n]) => (key.endsWith("/") ? `${key} (${n})` : key));
}

const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;

async function main() {
  const root = await readJson(join(repo, "package.json"));
  const workspaces = root.workspaces.filter((w) => w.startsWith("packages/"));
  const packages = [];
  const problems = [];
  for (const workspace of workspaces) {
    const manifest = await readJson(join(repo, workspace, "package.json"));
    const dir = workspace.slice("packages/".length);
    const built = Boolean(manifest.scripts?.build);
    if (built && manifest.private) problems.push(`${manifest.name}: built but private`);
    if (!built && !manifest.private) problems.push(`${manifest.name}: no build, yet publishable`);
    if (!manifest.private) packages.push({ dir, workspace, manifest });
  }
  if (problems.length > 0) throw new Error(`Not publishable as they are:\n  ${problems.join("\n  ")}`);

  if (!options.has("--no-build")) await stage("build", () => run("npm", ["run", "build"], { timeoutMs: 20 * 60_000 }));

  const work = await mkdtemp(join(tmpdir(), "agent-computer-consumer-"));
  const tarballs = join(work, "tarballs");
  const project = join(work, "project");
  await mkdir(tarballs);
  console.log(`Working in ${work}`);
  let passed = false;
  try {
    const packed = await stage(`npm pack (${packages.length} packages)`, () => {
      const out = run(
        "npm",
        [
          "pack",
          "--ignore-scripts",
          "--json",
          "--pack-destination",
          tarballs,
          ...packages.flatMap((p) => ["-w", p.workspace]),
        ],
        { capture: true },
      );
      return JSON.parse(out);
    });
    const byName = new Map(packed.map((p) => [p.name, p]));
    for (const { manifest } of packages) {
      const tarball = byName.get(manifest.name);
      if (!tarball) throw new Error(`npm pack made no tarball for ${manifest.name}`);
      const files = tarball.files.map((f) => f.path);
      for (const problem of manifestProblems(manifest, root, files)) problems.push(`${manifest.name}: ${problem}`);
      const readme = files.includes("README.md") ? "" : "  (no README.md yet)";
      console.log(
        `${manifest.name.padEnd(38)} ${String(files.length).padStart(3)} files ${kB(tarball.size).padStart(9)} packed ${kB(tarball.unpackedSize).padStart(10)} unpacked: ${contentsOf(files).join(", ")}${readme}`,
      );
    }
    const desktopRuntime = byName.get("@agent-computer/desktop-runtime");
    if (desktopRuntime && !desktopRuntime.files.some((f) => f.path === "image/runtime/lib/desktop.mjs"))
      problems.push(
        "@agent-computer/desktop-runtime: the built in-computer CLI (image/runtime/lib/desktop.mjs) is not packed",
      );
    if (problems.length > 0) throw new Error(`Packages not ready to publish:\n  ${problems.join("\n  ")}`);

    // Nothing of the workspace's npm environment leaks into an install outside it.
    const installEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
    installEnv.npm_config_better_sqlite3_local_prebuilds = await prebuiltSqliteBinding(work);
    installEnv.npm_config_prefer_offline = "true"; // the registry is asked only for what npm's cache lacks
    await stage("a new project outside the workspace, the tarballs installed with npm", async () => {
      await cp(join(here, "project"), project, { recursive: true });
      const file = (name) => `file:../tarballs/${byName.get(name).filename}`;
      const dependencies = Object.fromEntries(packages.map(({ manifest }) => [manifest.name, file(manifest.name)]));
      // A second installed copy of core, in its own folder, as npm makes one
      // when two dependencies pin different versions.
      dependencies["agent-computer-core-copy"] = file("@agent-computer/core");
      const dev = ["typescript", "@types/node", "vitest", "vite"];
      await writeFile(
        join(project, "package.json"),
        `${JSON.stringify(
          {
            name: "agent-computer-consumer",
            private: true,
            type: "module",
            dependencies,
            devDependencies: Object.fromEntries(dev.map((name) => [name, root.devDependencies[name]])),
            allowScripts: root.allowScripts,
          },
          null,
          2,
        )}\n`,
      );
      run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
        cwd: project,
        env: installEnv,
        timeoutMs: 15 * 60_000,
      });
      // The types of every entry point, as each module system resolves them.
      const entries = [];
      for (const { manifest } of packages) {
        for (const [subpath, target] of Object.entries(manifest.exports)) {
          if (typeof target !== "object") continue;
          const specifier = subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
          entries.push({ specifier, require: Boolean(target.require) });
        }
      }
      const typesOf = (list) =>
        `// Written by run.mjs: every entry point's types resolve.\n${list.map((e, i) => `import type * as entry${i} from "${e.specifier}";\nexport type Entry${i} = typeof entry${i};\n`).join("")}`;
      await writeFile(join(project, "entry-types.mts"), typesOf(entries));
      await writeFile(join(project, "entry-types.cts"), typesOf(entries.filter((e) => e.require)));
    });

    const node = (program) => run(process.execPath, [join("out", program)], { cwd: project, timeoutMs: 5 * 60_000 });
    const tsc = join(project, "node_modules", ".bin", "tsc");
    await check("tsc: the programs typecheck against .d.ts (ESM) and .d.cts (CJS)", () =>
      run(tsc, ["-p", "tsconfig.json"], { cwd: project }),
    );
    await check("tsc: our declaration files resolve every module they import (skipLibCheck off)", () => {
      // With skipLibCheck (the project's setting, and most apps') a type
      // import that does not resolve quietly becomes `any`; TypeScript's
      // default reports it. Only errors in our own files count here.
      const result = spawnSync(tsc, ["-p", "tsconfig.json", "--noEmit", "--skipLibCheck", "false"], {
        cwd: project,
        encoding: "utf8",
      });
      const ours = result.stdout.split("\n").filter((line) => line.startsWith("node_modules/@agent-computer/"));
      if (ours.length > 0) throw new Error(`${ours.length} errors:\n    ${ours.join("\n    ")}`);
    });
    for (const format of ["mjs", "cjs"]) {
      const label = format === "mjs" ? "ESM" : "CJS";
      await check(`every entry point loads (${label})`, () => node(`entries.${format}`));
      await check(`errors recognised across entries, bundles and copies (${label})`, () => node(`errors.${format}`));
      await check(`runtime's example: a bot's shell command and files on the fake provider (${label})`, () =>
        node(`runtime-example.${format}`),
      );
      await check(`screens: its pages with noVNC and xterm from their packages (${label})`, () =>
        node(`screens-example.${format}`),
      );
    }
    await check(
      "core's example: provider conformance on the fake provider, vitest (ESM suite; ESM and CJS provider)",
      () => run(join(project, "node_modules", ".bin", "vitest"), ["run"], { cwd: project, timeoutMs: 10 * 60_000 }),
    );

    await check(
      "the agent-computer-mcp bin: --help, then an MCP stdio handshake and tools/list on the fake provider",
      () => mcpBinHandshake(join(project, "node_modules", ".bin", "agent-computer-mcp"), project),
    );

    await check("the README's Install lines as written, then its first lines in that app (fake provider)", () =>
      readmeInstall({ repo, work, env: installEnv }),
    );

    const engine = spawnSync("docker", ["version", "--format", "{{.Server.Version}}"], { encoding: "utf8" });
    if (engine.status !== 0) {
      const why = `no Docker engine answers \`docker version\` (${(engine.stderr || engine.error?.message || "").trim()})`;
      if (ci) failures.push(`provider-docker's example: CI is set and ${why}`);
      else console.log(`\n== provider-docker's example: SKIPPED, ${why}; with CI set this fails`);
    } else {
      const bin = join(project, "node_modules", ".bin", "agent-computer-image");
      const imageReady = await check(
        `the computer image the installed packages name (Docker ${engine.stdout.trim()})`,
        () => {
          // The installed image folder must be the tree's byte for byte (the
          // tag hashes it), or hosts would run another image than CI tested.
          const owner = packages.find((p) => p.manifest.bin?.["agent-computer-image"]);
          if (!owner) throw new Error("no package has the agent-computer-image command");
          const treeBin = join(owner.workspace, owner.manifest.bin["agent-computer-image"]);
          const tree = run(process.execPath, [treeBin, "tag"], { capture: true }).trim();
          const installed = run(bin, ["tag"], { cwd: project, capture: true }).trim();
          if (installed !== tree) throw new Error(`the installed image tag ${installed} is not the tree's ${tree}`);
          console.log(`   ${installed}`);
          run(bin, ["build", "--quiet"], { cwd: project, timeoutMs: 20 * 60_000 }); // nothing to do when present
        },
      );
      if (imageReady) {
        for (const format of ["mjs", "cjs"]) {
          await check(
            `provider-docker's example: provision, exec, files, destroy (${format === "mjs" ? "ESM" : "CJS"})`,
            () => node(`docker-example.${format}`),
          );
        }
      }
    }
    passed = failures.length === 0;
  } finally {
    if (passed && !options.has("--keep")) await rm(work, { recursive: true, force: true });
    else console.log(`\nKept ${work}`);
  }
  console.log(`\nConsumer test ${failures.length === 0 ? "passed" : "FAILED"}:`);
  for (const [name, seconds] of timings) console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${name}`);
  console.log(`  ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s  in all`);
  if (failures.length > 0) throw new Error(`${failures.length} failed:\n  ${failures.join("\n  ")}`);
}

main().catch((error) => {
  console.error(`\nConsumer test failed: ${error.message}`);
  process.exit(1);
});
