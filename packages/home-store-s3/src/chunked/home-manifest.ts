/**
 * What a chunked checkpoint (format 2, README "Format 2") stores for one
 * revision: every directory and regular file of the home in restore order,
 * each file with the chunks that hold its bytes, and the packs that hold
 * small chunks. Sealed as one object bound to the storage id and revision
 * (sealed-manifest.ts).
 */
export interface HomeManifest {
  readonly format: 2;
  readonly storageId: string;
  readonly revision: number;
  /** Parents before children; no path twice. */
  readonly entries: readonly HomeManifestEntry[];
  /** Objects under `chunks/` that hold several sealed chunks, each named by a chunk ref's `pack` index. */
  readonly packs?: readonly PackRef[];
}

/** A pack: `chunks/<name>`, `bytes` long, its sealed chunks back to back. */
export interface PackRef {
  readonly name: string;
  readonly bytes: number;
}

/**
 * One chunk of a file: `size` plaintext bytes whose HMAC is `name`. Alone
 * at `chunks/<name>`, or, with `pack` and `at`, the sealed chunk at byte
 * `at` of pack `packs[pack]`.
 */
export interface ChunkRef {
  readonly name: string;
  readonly size: number;
  readonly pack?: number;
  readonly at?: number;
}

export type HomeManifestEntry =
  | { readonly path: string; readonly kind: "directory"; readonly mode: number; readonly mtime: number }
  | {
      readonly path: string;
      readonly kind: "file";
      readonly mode: number;
      readonly mtime: number;
      readonly size: number;
      /** In file order; sizes add up to `size`. */
      readonly chunks: readonly ChunkRef[];
    };

/** Where a chunk is stored: its own object (no pack) or at `at` in a pack. */
export interface ChunkLocation {
  readonly pack?: PackRef;
  readonly at?: number;
}

/** Where a chunk ref of a checked manifest (sealed-manifest.ts: every pack index names a pack) is stored. */
export function locationOf(manifest: HomeManifest, chunk: ChunkRef): ChunkLocation {
  if (chunk.pack === undefined) return {};
  return { pack: (manifest.packs ?? [])[chunk.pack] as PackRef, at: chunk.at as number };
}

/** Every chunk of the manifest with where it is stored (first location wins for a name listed twice). */
export function locationsOf(manifest: HomeManifest): Map<string, ChunkLocation> {
  const out = new Map<string, ChunkLocation>();
  for (const entry of manifest.entries)
    if (entry.kind === "file")
      for (const chunk of entry.chunks) if (!out.has(chunk.name)) out.set(chunk.name, locationOf(manifest, chunk));
  return out;
}

/** The objects a manifest needs: its own-object chunks' names and its packs' names. */
export function objectsOf(manifest: HomeManifest): Set<string> {
  const out = new Set<string>();
  for (const entry of manifest.entries)
    if (entry.kind === "file")
      for (const chunk of entry.chunks) out.add(locationOf(manifest, chunk).pack?.name ?? chunk.name);
  return out;
}

/**
 * The manifest of `entries` with each chunk placed where `locate` says:
 * the packs used are listed once, in first-use order, and named by index.
 */
export function placeChunks(
  manifest: Omit<HomeManifest, "packs">,
  locate: (name: string) => ChunkLocation,
): HomeManifest {
  const packs: PackRef[] = [];
  const index = new Map<string, number>();
  const entries = manifest.entries.map((entry): HomeManifestEntry => {
    if (entry.kind !== "file") return entry;
    const chunks = entry.chunks.map((chunk): ChunkRef => {
      const { pack, at } = locate(chunk.name);
      if (pack === undefined) return { name: chunk.name, size: chunk.size };
      let i = index.get(pack.name);
      if (i === undefined) {
        i = packs.length;
        index.set(pack.name, i);
        packs.push(pack);
      }
      return { name: chunk.name, size: chunk.size, pack: i, at };
    });
    return { ...entry, chunks };
  });
  return packs.length === 0 ? { ...manifest, entries } : { ...manifest, entries, packs };
}
