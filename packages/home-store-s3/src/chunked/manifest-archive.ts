import type { ChunkRef, HomeManifest } from "./home-manifest.js";
import { padding, TAR_END, tarHeaderOf } from "./manifest-tar.js";

/** Gives the bytes of one chunk, authenticated (from the cache or the bucket), or throws. */
export type ChunkSource = (chunk: ChunkRef) => Promise<Buffer>;

/** Every file's padding is a view of this block: the restore only reads it. */
const ZERO_BLOCK = Buffer.alloc(512);

/**
 * The home of a checked manifest as a tar stream for the codec's
 * `stageHome`, its chunks fetched `window` ahead in order (memory: about
 * `window` chunks). A chunk that fails fails the stream, and the staging
 * is discarded: the target never sees a partial home.
 */
export async function* manifestArchive(
  manifest: HomeManifest,
  source: ChunkSource,
  window: number,
): AsyncGenerator<Buffer> {
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
    yield tarHeaderOf(entry);
    if (entry.kind !== "file") continue;
    for (let i = 0; i < entry.chunks.length; i++) {
      fill();
      yield await (pending.shift() as Promise<Buffer>);
    }
    const pad = padding(entry.size);
    if (pad > 0) yield ZERO_BLOCK.subarray(0, pad);
  }
  yield TAR_END;
}
