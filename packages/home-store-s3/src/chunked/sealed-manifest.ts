import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { DEFAULT_RESTORE_LIMITS, type RestoreLimits } from "@agent-computer/checkpoint";
import { AgentComputerError } from "@agent-computer/core";
import { z } from "zod";
import type { ChunkKeys } from "./chunk-keys.js";
import type { HomeManifest, HomeManifestEntry, PackRef } from "./home-manifest.js";
import { CHUNK_BYTES, chunkNamePattern, SEALED_CHUNK_OVERHEAD } from "./sealed-chunk.js";

/** Version 1 archives start with "ac-ckpt\x01"; a v2 manifest with "ac-ckpt\x02". */
export const MANIFEST_MAGIC = Buffer.from("ac-ckpt\u0002", "latin1");
const NONCE = 12;
const TAG = 16;
/** A manifest larger than this is refused before it is opened (about 2 million entries' worth). */
export const MAX_MANIFEST_BYTES = 512 * 1024 * 1024;
const MAX_NAME_BYTES = 255;
/** The most bytes a manifest's JSON may inflate to: the sealed limit, as before manifests were compressed. */
const MAX_MANIFEST_TEXT_BYTES = MAX_MANIFEST_BYTES;
/** gzip's magic bytes: a manifest written since compression (older ones are plain JSON, which starts with "{"). */
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

/** AAD: magic, storage id, revision; an older revision's or another home's manifest does not open here. */
function aadOf(storageId: string, revision: number): Buffer {
  const id = Buffer.from(storageId, "utf8");
  const aad = Buffer.alloc(MANIFEST_MAGIC.length + 2 + id.length + 8);
  MANIFEST_MAGIC.copy(aad, 0);
  aad.writeUInt16BE(id.length, MANIFEST_MAGIC.length);
  id.copy(aad, MANIFEST_MAGIC.length + 2);
  aad.writeBigUInt64BE(BigInt(revision), MANIFEST_MAGIC.length + 2 + id.length);
  return aad;
}

export function isManifest(head: Uint8Array): boolean {
  return Buffer.from(head.buffer, head.byteOffset, Math.min(head.byteLength, 8)).equals(MANIFEST_MAGIC);
}

/** The sealed manifest and `sha256:<hex>` of its plaintext (the checkpoint's digest, the same on restore). */
export function sealManifest(keys: ChunkKeys, manifest: HomeManifest): { sealed: Buffer; digest: string } {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv("aes-256-gcm", keys.manifestKey, nonce, { authTagLength: TAG });
  cipher.setAAD(aadOf(manifest.storageId, manifest.revision));
  const text = Buffer.from(JSON.stringify(manifest), "utf8");
  // Compressed: a home of 20,000 files has a manifest of megabytes (paths, names), and every checkpoint uploads it.
  const body = cipher.update(gzipSync(text));
  cipher.final();
  return { sealed: Buffer.concat([MANIFEST_MAGIC, nonce, body, cipher.getAuthTag()]), digest: digestOf(text) };
}

function digestOf(text: Buffer): string {
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

/**
 * Opens and checks the manifest of `revision`, or throws CHECKPOINT_CORRUPT
 * naming what is wrong. Checked as hostile input even though it
 * authenticated (a leaked data key, or a bug in a writer): paths as the
 * tools' home paths (relative, no `.`/`..`/empty segments, no NUL), only
 * directories and regular files, parents first, no path twice, sizes that
 * add up, and the restore limits.
 */
export function openManifest(
  keys: ChunkKeys,
  revision: number,
  sealed: Buffer,
  limits: RestoreLimits = {},
): { manifest: HomeManifest; digest: string } {
  if (sealed.length > MAX_MANIFEST_BYTES)
    throw corruptManifest(`it is ${sealed.length} bytes, over the manifest limit`);
  if (sealed.length < MANIFEST_MAGIC.length + NONCE + TAG || !isManifest(sealed))
    throw corruptManifest("it is not a sealed manifest (too short, or wrong magic bytes)");
  const nonce = sealed.subarray(MANIFEST_MAGIC.length, MANIFEST_MAGIC.length + NONCE);
  const decipher = createDecipheriv("aes-256-gcm", keys.manifestKey, nonce, { authTagLength: TAG });
  decipher.setAAD(aadOf(keys.storageId, revision));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG));
  let text: Buffer;
  try {
    text = Buffer.concat([
      decipher.update(sealed.subarray(MANIFEST_MAGIC.length + NONCE, sealed.length - TAG)),
      decipher.final(),
    ]);
  } catch {
    throw corruptManifest(
      "it does not authenticate under this home's key, storage id and revision (tampered, another home's, or another revision's)",
    );
  }
  if (text.subarray(0, 2).equals(GZIP_MAGIC)) {
    try {
      text = gunzipSync(text, { maxOutputLength: MAX_MANIFEST_TEXT_BYTES });
    } catch {
      throw corruptManifest(`its content does not inflate to at most ${MAX_MANIFEST_TEXT_BYTES} bytes`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.toString("utf8"));
  } catch {
    throw corruptManifest("its content is not JSON");
  }
  return { manifest: checkManifest(parsed, keys.storageId, revision, limits), digest: digestOf(text) };
}

const uint = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const entrySchema = z.discriminatedUnion("kind", [
  z
    .object({ path: z.string(), kind: z.literal("directory"), mode: z.number().int().min(0).max(0o7777), mtime: uint })
    .strict(),
  z
    .object({
      path: z.string(),
      kind: z.literal("file"),
      mode: z.number().int().min(0).max(0o7777),
      mtime: uint,
      size: uint,
      chunks: z.array(
        z
          .object({
            name: z.string().regex(chunkNamePattern),
            size: z.number().int().min(1).max(CHUNK_BYTES),
            pack: uint.optional(),
            at: uint.optional(),
          })
          .strict(),
      ),
    })
    .strict(),
]);
const packSchema = z.object({ name: z.string().regex(chunkNamePattern), bytes: uint }).strict();
const manifestSchema = z
  .object({
    format: z.literal(2),
    storageId: z.string(),
    revision: uint,
    entries: z.array(entrySchema),
    packs: z.array(packSchema).optional(),
  })
  .strict();

/** The structural and path checks of `openManifest`, exported for the hostile-manifest tests. */
export function checkManifest(
  value: unknown,
  storageId: string,
  revision: number,
  limits: RestoreLimits = {},
): HomeManifest {
  const bounds = { ...DEFAULT_RESTORE_LIMITS, ...limits };
  const result = manifestSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw corruptManifest(`it is malformed at ${issue?.path.join(".") || "the top"} (${issue?.message})`);
  }
  const manifest = result.data as HomeManifest;
  if (manifest.storageId !== storageId) throw corruptManifest("it names another home's storage id");
  if (manifest.revision !== revision) throw corruptManifest(`it is revision ${manifest.revision}'s, not ${revision}'s`);
  if (manifest.entries.length > bounds.maxEntries)
    throw corruptManifest(`it has ${manifest.entries.length} entries, over the limit of ${bounds.maxEntries}`);
  const kinds = new Map<string, "directory" | "file">();
  let total = 0;
  for (const entry of manifest.entries) {
    checkEntryPath(entry.path, bounds);
    if (kinds.has(entry.path)) throw corruptManifest(`"${shown(entry.path)}" appears twice`);
    const slash = entry.path.lastIndexOf("/");
    if (slash !== -1) {
      const parent = kinds.get(entry.path.slice(0, slash));
      if (parent !== "directory")
        throw corruptManifest(`"${shown(entry.path)}" comes before its folder, or its parent is a file`);
    }
    kinds.set(entry.path, entry.kind);
    if (entry.kind === "file") total += checkFileEntry(entry, bounds, manifest.packs ?? []);
    if (total > bounds.maxTotalBytes) throw corruptManifest(`its files add up to over ${bounds.maxTotalBytes} bytes`);
  }
  return manifest;
}

function checkFileEntry(
  entry: Extract<HomeManifestEntry, { kind: "file" }>,
  bounds: Required<RestoreLimits>,
  packs: readonly PackRef[],
): number {
  if (entry.size > bounds.maxFileBytes)
    throw corruptManifest(
      `"${shown(entry.path)}" claims ${entry.size} bytes, over the file limit of ${bounds.maxFileBytes}`,
    );
  let sum = 0;
  for (const chunk of entry.chunks) {
    sum += chunk.size;
    if (chunk.pack === undefined && chunk.at === undefined) continue;
    const pack = chunk.pack === undefined ? undefined : packs[chunk.pack];
    // A chunk in a pack lies wholly inside it: a reader never slices past the pack's stated end.
    if (pack === undefined || chunk.at === undefined || chunk.at + chunk.size + SEALED_CHUNK_OVERHEAD > pack.bytes)
      throw corruptManifest(`a chunk of "${shown(entry.path)}" names no pack, or lies outside it`);
  }
  if (sum !== entry.size)
    throw corruptManifest(`the chunks of "${shown(entry.path)}" hold ${sum} bytes, not the ${entry.size} it claims`);
  return entry.size;
}

function checkEntryPath(path: string, bounds: Required<RestoreLimits>): void {
  if (path === "") throw corruptManifest("an entry has an empty path");
  if (path.includes("\0")) throw corruptManifest(`"${shown(path)}" holds a NUL byte`);
  if (path.startsWith("/")) throw corruptManifest(`"${shown(path)}" is absolute`);
  if (Buffer.byteLength(path, "utf8") > bounds.maxPathLength)
    throw corruptManifest(`"${shown(path)}" is over the path length limit`);
  const segments = path.split("/");
  if (segments.length > bounds.maxDepth)
    throw corruptManifest(`"${shown(path)}" is deeper than ${bounds.maxDepth} folders`);
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === "..")
      throw corruptManifest(`"${shown(path)}" has a "${segment}" segment (only plain names stay inside the home)`);
    if (Buffer.byteLength(segment, "utf8") > MAX_NAME_BYTES)
      throw corruptManifest(`"${shown(path)}" has a name over 255 bytes`);
  }
}

/** A path as it can be shown in a message: control characters escaped, long ones cut. */
function shown(path: string): string {
  const escaped = JSON.stringify(path).slice(1, -1);
  return escaped.length > 120 ? `${escaped.slice(0, 120)}…` : escaped;
}

export function corruptManifest(reason: string): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The checkpoint cannot be restored: its manifest is refused: ${reason}. Nothing was restored from it.`,
  );
}
