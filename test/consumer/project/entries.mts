// Every entry point of every installed @agent-computer package loads with
// import: the list comes from each package's own `exports`, so a new subpath
// is covered without editing this file.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

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
