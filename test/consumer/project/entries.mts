// Every entry point of every installed @agent-computer package loads with
// import: the list comes from each package's own `exports`, so a new subpath
// is covered without editing this file.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStateStore } from "@agent-computer/state-store-sqlite";

const require = createRequire(import.meta.url);
const project = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as {
  dependencies: Record<string, string>;
};
const loaded: string[] = [];
for (const name of Object.keys(project.dependencies).filter((n) => n.startsWith("@agent-computer/"))) {
  const manifest = require(`${name}/package.json`) as { exports: Record<string, unknown> };
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (typeof target !== "object" || target === null || !("import" in target)) continue;
    const specifier = subpath === "." ? name : `${name}/${subpath.slice(2)}`;
    const module = (await import(specifier)) as Record<string, unknown>;
    assert.ok(Object.keys(module).length > 0, `${specifier} exports something`);
    loaded.push(specifier);
  }
}
console.log(`entries (ESM): ${loaded.length} loaded: ${loaded.join(", ")}`);

// The one native binding an installed package carries (better-sqlite3,
// through state-store-sqlite) opens a database: the install put a binding
// built for this Node in place (test/consumer/run.mjs says how it arrives).
const dir = await mkdtemp(join(tmpdir(), "consumer-sqlite-"));
const store = SqliteStateStore.open({ path: join(dir, "state.db") });
assert.equal(typeof (await store.now()), "number", "the SQLite state store answers");
store.close();
await rm(dir, { recursive: true, force: true });
console.log("state-store-sqlite (ESM): a database opened with the installed native binding");
