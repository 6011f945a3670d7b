import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Every folder (as "dir") and file (its SHA-256) under `dir`, by home-relative path: two homes compare equal only if they are. */
export function treeOf(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) {
      out[`${path}/`] = "dir";
      Object.assign(out, treeOf(dir, path));
    } else
      out[path] = createHash("sha256")
        .update(readFileSync(join(dir, path)))
        .digest("hex");
  }
  return out;
}
