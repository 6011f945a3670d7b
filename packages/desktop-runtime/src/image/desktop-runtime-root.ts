import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "@agent-computer/desktop-runtime";

let cached: { root: string; version: string } | undefined;

/**
 * The package's folder and version, found upward from this module. The code
 * is bundled to several depths (src/image, dist), so a fixed
 * relative path would break in one of them.
 */
export function desktopRuntimePackage(): { root: string; version: string } {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
      if (parsed.name === PACKAGE_NAME) {
        cached = { root: dir, version: parsed.version ?? "0.0.0" };
        return cached;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${PACKAGE_NAME}: cannot find its own package.json above ${import.meta.url}`);
    dir = parent;
  }
}

/** The folder holding the Dockerfile, the seccomp profile and the in-computer files. */
export function computerImageDir(): string {
  return join(desktopRuntimePackage().root, "image");
}
