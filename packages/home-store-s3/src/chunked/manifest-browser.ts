import { MAX_STORED_READ_BYTES, type StoredHomeEntry, type StoredHomeRange } from "@agent-computer/checkpoint";
import { AgentComputerError, normalizeHomePath } from "@agent-computer/core";
import type { HomeManifest, HomeManifestEntry } from "./home-manifest.js";

// Browsing a format-2 revision (issue 29) from its checked manifest alone:
// paths are normalised like the tools' home paths first (`..` out of the
// home, absolute paths and NUL are INVALID_ARGUMENT), and a file's bytes
// come from just the chunks that hold the asked range.

/** The entries of folder `dir` ("" for the top), sorted by name. */
export function listManifest(manifest: HomeManifest, dir: string): StoredHomeEntry[] {
  const rel = normalizeHomePath(dir);
  if (rel !== "") {
    const folder = manifest.entries.find((e) => e.path === rel);
    if (folder === undefined) throw new AgentComputerError("NOT_FOUND", `"${dir}" is not in the stored home.`);
    if (folder.kind !== "directory") throw new AgentComputerError("INVALID_ARGUMENT", `"${dir}" is not a folder.`);
  }
  const prefix = rel === "" ? "" : `${rel}/`;
  return manifest.entries
    .filter((e) => e.path.startsWith(prefix) && !e.path.slice(prefix.length).includes("/"))
    .map((e) => ({
      name: e.path.slice(prefix.length),
      path: e.path,
      kind: e.kind,
      size: e.kind === "file" ? e.size : 0,
      mode: e.mode,
      modifiedAt: e.mtime * 1000,
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The file entry at `path`, the clamped range, and the chunks (with their offsets) that hold it. */
export function planRead(
  manifest: HomeManifest,
  path: string,
  range: StoredHomeRange | undefined,
): {
  entry: Extract<HomeManifestEntry, { kind: "file" }>;
  start: number;
  end: number;
  chunks: { name: string; size: number; offset: number }[];
} {
  const rel = normalizeHomePath(path);
  if (rel === "") throw new AgentComputerError("INVALID_ARGUMENT", "The home itself is a folder; name a file.");
  const entry = manifest.entries.find((e) => e.path === rel);
  if (entry === undefined) throw new AgentComputerError("NOT_FOUND", `"${path}" is not in the stored home.`);
  if (entry.kind !== "file") throw new AgentComputerError("INVALID_ARGUMENT", `"${path}" is not a regular file.`);
  const start = Math.min(Math.max(range?.start ?? 0, 0), entry.size);
  const end = Math.max(start, Math.min(range?.end ?? entry.size, entry.size));
  if (end - start > MAX_STORED_READ_BYTES)
    throw new AgentComputerError(
      "LIMIT_EXCEEDED",
      `Reading ${end - start} bytes of "${path}" at once is over the ${MAX_STORED_READ_BYTES}-byte limit; read it in ranges.`,
    );
  const chunks: { name: string; size: number; offset: number }[] = [];
  let offset = 0;
  for (const chunk of entry.chunks) {
    if (offset < end && offset + chunk.size > start) chunks.push({ ...chunk, offset });
    offset += chunk.size;
  }
  return { entry, start, end, chunks };
}
