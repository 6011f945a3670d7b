import { readdir, readFile } from "node:fs/promises";
import { extname } from "node:path";
import { consolePage } from "./page/console-page.js";

/** Where the page's own stylesheet and script modules are served from. */
export const ASSET_PATH = "/console/";

const TYPES: Record<string, string> = {
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
};

/**
 * The page: its markup (with the computer's id) and the stylesheet and
 * script modules beside it in `src/page/`, served as they are (no build
 * step: the browser loads the modules itself). Only the `.css` and `.js`
 * files of that folder are reachable, read once at start.
 */
export async function loadPageAssets() {
  const folder = new URL("./page/", import.meta.url);
  const files = new Map<string, { headers: Record<string, string>; body: Buffer }>();
  for (const name of await readdir(folder)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const body = await readFile(new URL(name, folder));
    // no-cache: an edited module is picked up at the next load, without a stale mix of old and new.
    files.set(`${ASSET_PATH}${name}`, { headers: { "Content-Type": type, "Cache-Control": "no-cache" }, body });
  }
  return {
    page: (computerId: string) => consolePage(computerId, ASSET_PATH),
    file: (pathname: string) => files.get(pathname),
  };
}
