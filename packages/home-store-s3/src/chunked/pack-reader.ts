import type { ChunkBucket } from "./chunk-bucket.js";
import type { ChunkKeys } from "./chunk-keys.js";
import type { PackRef } from "./home-manifest.js";
import { openChunk, SEALED_CHUNK_OVERHEAD } from "./sealed-chunk.js";

/**
 * A restore's reads of packed chunks: each pack is downloaded whole, once,
 * `ahead` packs before the restore reaches them (in the order `needed`
 * lists them), and the last few are kept, so a home of 20,000 small files
 * is a few hundred downloads. Memory: about `ahead` + 2 packs.
 */
export class PackReader {
  private readonly fetched = new Map<string, Promise<Buffer>>();
  private readonly position = new Map<string, number>();

  constructor(
    private readonly bucket: ChunkBucket,
    private readonly keys: ChunkKeys,
    /** The packs the restore will read from, in the order it first needs them. */
    private readonly needed: readonly PackRef[],
    private readonly ahead: number,
    private readonly signal: AbortSignal,
  ) {
    needed.forEach((pack, i) => {
      if (!this.position.has(pack.name)) this.position.set(pack.name, i);
    });
  }

  /** Chunk `name` (`size` bytes) at `at` of `pack`, opened and checked. */
  async chunk(name: string, size: number, pack: PackRef, at: number): Promise<Buffer> {
    const fetching = this.pack(pack);
    this.prefetchAfter(pack);
    const whole = await fetching;
    return openChunk(this.keys, name, size, whole.subarray(at, at + size + SEALED_CHUNK_OVERHEAD));
  }

  private pack(pack: PackRef): Promise<Buffer> {
    let fetching = this.fetched.get(pack.name);
    if (fetching === undefined) {
      fetching = this.bucket.fetchPack(pack, this.signal);
      // Awaited by whoever needs it; this only keeps a prefetch's failure from being unhandled.
      fetching.catch(() => {});
      this.fetched.set(pack.name, fetching);
      // The oldest go first; one needed again is downloaded again.
      while (this.fetched.size > this.ahead + 2) this.fetched.delete(this.fetched.keys().next().value as string);
    }
    return fetching;
  }

  private prefetchAfter(pack: PackRef): void {
    const from = this.position.get(pack.name);
    if (from === undefined) return;
    for (let i = from + 1; i <= from + this.ahead && i < this.needed.length; i++) {
      const next = this.needed[i] as PackRef;
      if (!this.fetched.has(next.name)) this.pack(next);
    }
  }
}
