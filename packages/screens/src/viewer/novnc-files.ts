import { readFileSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";

/**
 * The installed @novnc/novnc package, served as the browser's ES modules
 * straight from node_modules: its `core/` and `vendor/` folders only import
 * each other by relative paths, so nothing needs bundling, there is no build
 * step, and the version served is exactly the one installed (offline too).
 * Files are read once and kept (about 750 KB).
 */
export class NovncFiles {
  readonly version: string;
  private readonly root: string;
  private readonly cache = new Map<string, Buffer>();

  constructor() {
    // The package exports only core/rfb.js; its root is two folders up.
    const rfb = createRequire(import.meta.url).resolve("@novnc/novnc");
    this.root = realpathSync(dirname(dirname(rfb)));
    this.version = (JSON.parse(readFileSync(join(this.root, "package.json"), "utf8")) as { version: string }).version;
  }

  /**
   * The bytes of `file` (like "core/rfb.js"), or undefined when it is not a
   * JavaScript file inside the package's core/ or vendor/ folder.
   */
  async read(file: string): Promise<Buffer | undefined> {
    if (!/^(core|vendor)\/[A-Za-z0-9_\-/.]+\.js$/.test(file) || file.split("/").some((part) => part.startsWith(".")))
      return undefined;
    const cached = this.cache.get(file);
    if (cached) return cached;
    let real: string;
    try {
      real = realpathSync(join(this.root, file));
    } catch {
      return undefined;
    }
    if (!real.startsWith(this.root + sep)) return undefined;
    const bytes = await readFile(real);
    this.cache.set(file, bytes);
    return bytes;
  }
}
