import type { HomeEntryItem } from "@agent-computer/checkpoint";
import type { ChunkRef, HomeManifest } from "./home-manifest.js";

/** Gives the bytes of one chunk, authenticated (from the cache or the bucket), or throws. */
export type ChunkSource = (chunk: ChunkRef) => Promise<Buffer>;

/**
 * The home of a checked manifest as the codec's entries, for
 * `restoreHomeEntries` (each entry, then a file's chunks), its chunks
 * fetched `window` ahead in order (memory: about `window` chunks). The
 * manifest's entries go as they are: the codec applies a tar's checks to
 * them without a tar being written and parsed. A chunk that fails fails
 * the stream, and the staging is discarded: the target never sees a
 * partial home.
 */
export async function* manifestEntries(
  manifest: HomeManifest,
  source: ChunkSource,
  window: number,
): AsyncGenerator<HomeEntryItem> {
  const wanted = manifest.entries.flatMap((e) => (e.kind === "file" ? e.chunks : []));
  const pending: Promise<Buffer>[] = [];
  let next = 0;
  const fill = () => {
    while (next < wanted.length && pending.length < window) {
      const fetching = source(wanted[next++] as ChunkRef);
      fetching.catch(() => {}); // awaited in order below; this only keeps an early failure from being unhandled
      pending.push(fetching);
    }
  };
  for (const entry of manifest.entries) {
    yield entry;
    if (entry.kind !== "file") continue;
    for (let i = 0; i < entry.chunks.length; i++) {
      fill();
      yield await (pending.shift() as Promise<Buffer>);
    }
  }
}
