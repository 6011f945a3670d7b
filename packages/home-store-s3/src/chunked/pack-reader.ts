import type { ChunkBucket } from "./chunk-bucket.js";
import type { ChunkKeys } from "./chunk-keys.js";
import { PACK_BYTES } from "./chunk-uploader.js";
import type { PackRef } from "./home-manifest.js";
import { openChunk, SEALED_CHUNK_OVERHEAD } from "./sealed-chunk.js";

/**
 * A restore's reads of packed chunks. The restore asks for chunks in the
 * manifest's order, and the manifest says which pack holds each, so every
 * pack's uses are counted before the first read: a pack read for more than
 * one chunk is downloaded whole, once, up to `ahead` packs before the
 * restore reaches it, and held until its last chunk has been asked for; a
 * pack read for one chunk gives that chunk alone (a ranged GET). Packs
 * held take at most the bytes of `ahead + 2` full packs, and at most
 * `ahead + 1` download at once; past either, a chunk is read alone too.
 *
 * Before, the last `ahead + 2` packs were kept whatever their uses. A home
 * whose packs interleave (each incremental checkpoint adds a pack of the
 * files it changed, spread over the whole home) then downloaded its packs
 * again and again: 46 packs 890 times for a 256 MiB mixed home after six
 * incremental checkpoints (issue 48).
 */
export class PackReader {
  /** Packs downloading or downloaded, each until its last use is asked for. */
  private readonly held = new Map<string, Promise<Buffer>>();
  /** Uses of each pack not yet asked for. */
  private readonly remaining = new Map<string, number>();
  /** The packs in the order the restore first needs them. */
  private readonly order: PackRef[] = [];
  private readonly position = new Map<string, number>();
  private readonly budget: number;
  private heldBytes = 0;
  private downloading = 0;

  constructor(
    private readonly bucket: ChunkBucket,
    private readonly keys: ChunkKeys,
    /** The pack of every chunk the restore will read from one, in the order it will ask. */
    uses: readonly PackRef[],
    private readonly ahead: number,
    private readonly signal: AbortSignal,
  ) {
    this.budget = (ahead + 2) * PACK_BYTES;
    for (const pack of uses) {
      const counted = this.remaining.get(pack.name);
      if (counted === undefined) {
        this.position.set(pack.name, this.order.length);
        this.order.push(pack);
      }
      this.remaining.set(pack.name, (counted ?? 0) + 1);
    }
  }

  /** Chunk `name` (`size` bytes) at `at` of `pack`, opened and checked. */
  async chunk(name: string, size: number, pack: PackRef, at: number): Promise<Buffer> {
    const left = this.remaining.get(pack.name) ?? 0;
    if (left > 0) this.remaining.set(pack.name, left - 1);
    let whole = this.held.get(pack.name);
    if (whole === undefined && left > 1 && this.canHold(pack)) whole = this.hold(pack);
    // Its last use: this call keeps the download, the reader lets it go.
    if (left <= 1 && this.held.delete(pack.name)) this.heldBytes -= pack.bytes;
    this.prefetchAfter(pack);
    if (whole === undefined) return this.bucket.fetch(this.keys, name, size, this.signal, { pack, at });
    const bytes = await whole;
    return openChunk(this.keys, name, size, bytes.subarray(at, at + size + SEALED_CHUNK_OVERHEAD));
  }

  private canHold(pack: PackRef): boolean {
    return this.downloading <= this.ahead && this.heldBytes + pack.bytes <= this.budget;
  }

  private hold(pack: PackRef): Promise<Buffer> {
    const fetching = this.bucket.fetchPack(pack, this.signal);
    this.downloading++;
    // Awaited by whoever needs it; this only counts it and keeps a prefetch's failure from being unhandled.
    fetching.then(
      () => this.downloading--,
      () => this.downloading--,
    );
    this.held.set(pack.name, fetching);
    this.heldBytes += pack.bytes;
    return fetching;
  }

  private prefetchAfter(pack: PackRef): void {
    const from = this.position.get(pack.name);
    if (from === undefined) return;
    for (let i = from + 1; i <= from + this.ahead && i < this.order.length; i++) {
      const next = this.order[i] as PackRef;
      if (!this.held.has(next.name) && (this.remaining.get(next.name) ?? 0) > 1 && this.canHold(next)) this.hold(next);
    }
  }
}
