import { readFileSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** One file the terminal page loads. */
interface XtermFile {
  readonly path: string;
  readonly contentType: string;
}

/**
 * The three files of the installed xterm packages the terminal page loads,
 * served straight from node_modules (offline, no bundling, exactly the
 * versions installed) under names that carry the version:
 * `xterm-<v>.js` (@xterm/xterm's UMD `lib/xterm.js`), `xterm-<v>.css`
 * (`css/xterm.css`) and `addon-fit-<v>.js` (@xterm/addon-fit's UMD
 * `lib/addon-fit.js`). Nothing else of either package is reachable. Files
 * are read once and kept (about 500 KB).
 */
export class XtermFiles {
  /** The names the page refers to, under `<publicPath>/xterm/`. */
  readonly names: { readonly script: string; readonly stylesheet: string; readonly fit: string };
  private readonly files = new Map<string, XtermFile>();
  private readonly cache = new Map<string, Buffer>();

  constructor() {
    const require = createRequire(import.meta.url);
    // Both packages' main is lib/<name>.js; their roots are one folder up.
    const xterm = packageOf(require.resolve("@xterm/xterm"));
    const fit = packageOf(require.resolve("@xterm/addon-fit"));
    this.names = {
      script: `xterm-${xterm.version}.js`,
      stylesheet: `xterm-${xterm.version}.css`,
      fit: `addon-fit-${fit.version}.js`,
    };
    const javascript = "text/javascript; charset=utf-8";
    this.files.set(this.names.script, { path: join(xterm.root, "lib", "xterm.js"), contentType: javascript });
    this.files.set(this.names.stylesheet, {
      path: join(xterm.root, "css", "xterm.css"),
      contentType: "text/css; charset=utf-8",
    });
    this.files.set(this.names.fit, { path: join(fit.root, "lib", "addon-fit.js"), contentType: javascript });
  }

  /** The file served as `name`, or undefined when `name` is not one of the three. */
  async read(name: string): Promise<{ bytes: Buffer; contentType: string } | undefined> {
    const file = this.files.get(name);
    if (!file) return undefined;
    let bytes = this.cache.get(name);
    if (!bytes) {
      bytes = await readFile(file.path);
      this.cache.set(name, bytes);
    }
    return { bytes, contentType: file.contentType };
  }
}

function packageOf(main: string): { root: string; version: string } {
  const root = realpathSync(dirname(dirname(main)));
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  return { root, version };
}
