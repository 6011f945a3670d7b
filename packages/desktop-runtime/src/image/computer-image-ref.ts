import { createHash } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { ComputerImageExtras } from "./computer-image-extras.js";
import { computerImageDir, desktopRuntimePackage } from "./desktop-runtime-root.js";

/** Where computer images are tagged. */
export const COMPUTER_IMAGE_REPOSITORY = "agent-computer/computer";

/** The folders and files of image/ that go into the build (README.md does not: docs never force a rebuild). */
const IMAGE_INPUTS = ["Dockerfile", "seccomp", "runtime"];

/** Paths, relative to the image folder and sorted, of every file the build context holds. */
export async function computerImageFiles(): Promise<string[]> {
  const dir = computerImageDir();
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const info = await stat(join(dir, rel));
    if (info.isDirectory()) {
      for (const name of (await readdir(join(dir, rel))).sort()) await walk(`${rel}/${name}`);
    } else if (info.isFile()) out.push(rel);
  };
  for (const input of IMAGE_INPUTS) await walk(input);
  return out.sort();
}

/**
 * `<package version>-<12 hex digits>`: the hash covers every build input's
 * path, executable bit and bytes, and the extras, so an image built from
 * other in-computer code or with other extras never carries this tag.
 */
export async function computerImageTag(extras: ComputerImageExtras = {}): Promise<string> {
  const dir = computerImageDir();
  const hash = createHash("sha256");
  for (const rel of await computerImageFiles()) {
    const info = await stat(join(dir, rel));
    hash.update(`${rel}\0${info.mode & 0o111 ? "x" : "-"}\0`);
    hash.update(await readFile(join(dir, rel)));
    hash.update("\0");
  }
  hash.update(`brave=${extras.brave ? 1 : 0};uv=${extras.uv ? (extras.uvVersion ?? "default") : 0}`);
  return `${desktopRuntimePackage().version}-${hash.digest("hex").slice(0, 12)}`;
}

/**
 * The image a host should run. `AGENT_COMPUTER_IMAGE` names another image
 * whole; `AGENT_COMPUTER_IMAGE_TAG` keeps the repository and swaps the tag;
 * otherwise the tag this package's files give.
 */
export async function computerImageRef(
  options: { env?: Record<string, string | undefined>; extras?: ComputerImageExtras } = {},
): Promise<string> {
  const env = options.env ?? process.env;
  const image = env.AGENT_COMPUTER_IMAGE?.trim();
  if (image) return image;
  const tag = env.AGENT_COMPUTER_IMAGE_TAG?.trim();
  return `${COMPUTER_IMAGE_REPOSITORY}:${tag || (await computerImageTag(options.extras))}`;
}
