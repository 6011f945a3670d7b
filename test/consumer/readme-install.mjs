// The README's "Install" lines, run as written, and its "An app's first
// lines" example run in the app they made (test/consumer/run.mjs calls it).
//
//   npm ci && npm run pack-packages -- ../agent-computer-packages
//   cd ../my-app && npm install ../agent-computer-packages/*.tgz
//
// The clone is this tree, already installed and built, so the first line
// runs from `npm run pack-packages` on with --no-build; the folders keep
// the README's layout (the packages folder beside the app) inside `work`.
import { spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

const INSTALL = [
  /^npm ci && npm run pack-packages -- \.\.\/agent-computer-packages$/,
  /^cd \.\.\/my-app && (npm install \.\.\/agent-computer-packages\/\*\.tgz)$/,
];

/** The README's sh block under "## Install" and its ts block after "An app's first lines:". */
async function readmeBlocks(repo) {
  const readme = await readFile(join(repo, "README.md"), "utf8");
  const install = /## Install\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  const firstLines = /An app's first lines:\s*```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!install || !firstLines) throw new Error("README.md has no Install block or no first-lines example");
  const lines = install.trim().split("\n");
  if (lines.length !== INSTALL.length || lines.some((line, i) => !INSTALL[i].test(line))) {
    throw new Error(`README.md's Install lines changed; update readme-install.mjs with them:\n${install}`);
  }
  return { appInstall: INSTALL[1].exec(lines[1])[1], firstLines };
}

function sh(line, cwd, env) {
  const result = spawnSync("sh", ["-c", line], { cwd, env, stdio: "inherit", timeout: 15 * 60_000 });
  if (result.status !== 0) throw new Error(`${line} (in ${cwd}) exited with ${result.status ?? result.error?.message}`);
}

/** Runs the README's install in `work` with `env` (the machine's install settings); throws on any failure. */
export async function readmeInstall({ repo, work, env }) {
  const { appInstall, firstLines } = await readmeBlocks(repo);
  // From a folder beside the packages folder, as a clone would be (npm resolves the folder from where it was run).
  const clone = join(work, "clone");
  await mkdir(clone, { recursive: true });
  sh(`npm --prefix "${repo}" run pack-packages -- ../agent-computer-packages --no-build`, clone, process.env);
  const app = join(work, "my-app");
  await mkdir(app, { recursive: true });
  await writeFile(join(app, "package.json"), `${JSON.stringify({ name: "my-app", private: true, type: "module" })}\n`);
  sh(appInstall, app, env);
  // The example is TypeScript without a type annotation: as an ES module it runs as it is.
  await writeFile(join(app, "first-lines.mjs"), firstLines);
  sh("node first-lines.mjs", app, env);
  // Its run ended "completed": the home was checkpointed into ./data.
  const saved = await readdir(join(app, "data"), { recursive: true, withFileTypes: true });
  const files = saved.filter((entry) => entry.isFile()).length;
  if (files === 0) throw new Error("the first lines' run left no checkpoint in ./data");
  console.log(`   the app installed the tarballs as written; its first run left ${files} checkpoint files in ./data`);
}
