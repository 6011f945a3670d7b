// Every entry point with a `require` condition loads with require, in a
// CommonJS program (no ESM anywhere on the way).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const project = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
};
const loaded: string[] = [];
const esmOnly: string[] = [];
for (const name of Object.keys(project.dependencies).filter((n) => n.startsWith("@agent-computer/"))) {
  const manifest = require(`${name}/package.json`) as { exports: Record<string, unknown> };
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (typeof target !== "object" || target === null) continue;
    const specifier = subpath === "." ? name : `${name}/${subpath.slice(2)}`;
    if (!("require" in target)) {
      esmOnly.push(specifier);
      continue;
    }
    const module = require(specifier) as Record<string, unknown>;
    assert.ok(Object.keys(module).length > 0, `${specifier} exports something`);
    loaded.push(specifier);
  }
}
console.log(`entries (CJS): ${loaded.length} loaded: ${loaded.join(", ")}; ESM only: ${esmOnly.join(", ") || "none"}`);
