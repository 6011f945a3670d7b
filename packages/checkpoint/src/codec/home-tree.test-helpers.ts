import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";

/** A map of every path below `dir` to its kind and content digest; links are not followed. */
export async function digestTree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(abs: string, rel: string): Promise<void> {
    for (const name of (await readdir(abs)).sort()) {
      const path = rel === "" ? name : `${rel}/${name}`;
      const info = await lstat(join(abs, name));
      if (info.isDirectory()) {
        out.set(path, "dir");
        await walk(join(abs, name), path);
      } else if (info.isFile()) out.set(path, `file ${await fileDigest(join(abs, name))}`);
      else if (info.isSymbolicLink()) out.set(path, `link ${await readlink(join(abs, name))}`);
      else out.set(path, "other");
    }
  }
  await walk(dir, "");
  return out;
}

/** sha256 of a file, streamed so a 1 GiB file costs no memory. */
export async function fileDigest(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk);
  return hash.digest("hex");
}
