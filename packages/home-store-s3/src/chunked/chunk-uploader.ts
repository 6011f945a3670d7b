import { randomBytes } from "node:crypto";
import PQueue from "p-queue";
import type { ChunkBucket } from "./chunk-bucket.js";
import type { ChunkKeys } from "./chunk-keys.js";
import type { ChunkLocation, PackRef } from "./home-manifest.js";
import { CHUNK_BYTES, SEALED_CHUNK_OVERHEAD, sealChunk } from "./sealed-chunk.js";

/** A pack is sent once it holds this many sealed bytes. */
export const PACK_BYTES = 4 * 1024 * 1024;
/** Chunks at least this large are objects of their own; smaller ones (small files, files' tails) go into packs. */
const OWN_OBJECT_BYTES = CHUNK_BYTES / 2;

/**
 * Seals and uploads the chunks a checkpoint's snapshot names as it reads
 * them, so each byte of the home is read, named and sealed once. Small
 * chunks are batched into packs (README "Format 2"): a home of 20,000
 * small files is a few hundred requests, not 20,000. At most `concurrency`
 * uploads run and as many wait (`offer` waits for room), so memory stays
 * near 2 x `concurrency` objects plus the pack being filled. The first
 * failure ends the rest: later offers and `finish` throw it.
 */
export class ChunkUploader {
  private readonly queue: PQueue;
  private readonly located = new Map<string, ChunkLocation>();
  private filling: { pack: { name: string; bytes: number }; parts: Buffer[] } | undefined;
  private failure: { error: unknown } | undefined;
  private sent = 0;

  constructor(
    private readonly bucket: ChunkBucket,
    private readonly keys: ChunkKeys,
    /** Where the bucket already holds chunks (the committed revision's, none a deletion mark names). */
    private readonly stored: ReadonlyMap<string, ChunkLocation>,
    private readonly concurrency: number,
    private readonly signal: AbortSignal,
  ) {
    this.queue = new PQueue({ concurrency });
  }

  /**
   * Queues chunk `name` (plaintext `plain`) unless the bucket has it or
   * this checkpoint already sent it. Seals `plain` before its first wait,
   * so the caller may reuse the buffer once this returned a promise.
   */
  async offer(name: string, plain: Uint8Array): Promise<void> {
    this.throwIfFailed();
    this.signal.throwIfAborted();
    if (this.located.has(name) || this.stored.has(name)) return;
    const sealed = sealChunk(this.keys, name, plain);
    if (plain.length >= OWN_OBJECT_BYTES) {
      this.located.set(name, {});
      this.send(this.bucket.chunkKey(name), sealed);
    } else this.located.set(name, this.pack(sealed));
    if (this.queue.size >= this.concurrency) await this.queue.onSizeLessThan(this.concurrency);
    this.throwIfFailed();
  }

  /** Where an offered chunk is stored. */
  locate(name: string): ChunkLocation {
    const location = this.located.get(name) ?? this.stored.get(name);
    if (location === undefined) throw new Error(`chunk ${name.slice(0, 12)}… was never offered`);
    return location;
  }

  /** Sends the last pack and waits for every upload; the sealed bytes sent. */
  async finish(): Promise<number> {
    this.throwIfFailed();
    this.flush();
    await this.queue.onIdle();
    this.throwIfFailed();
    return this.sent;
  }

  /** Drops what waits and waits for what runs (the checkpoint failed elsewhere). */
  async stop(): Promise<void> {
    this.failure ??= { error: new Error("the checkpoint stopped") };
    this.queue.clear();
    await this.queue.onIdle();
  }

  private pack(sealed: Buffer): ChunkLocation {
    this.filling ??= { pack: { name: randomBytes(32).toString("hex"), bytes: 0 }, parts: [] };
    const { pack, parts } = this.filling;
    const location = { pack: pack as PackRef, at: pack.bytes };
    parts.push(sealed);
    pack.bytes += sealed.length;
    if (pack.bytes >= PACK_BYTES - SEALED_CHUNK_OVERHEAD) this.flush();
    return location;
  }

  private flush(): void {
    if (this.filling === undefined) return;
    const { pack, parts } = this.filling;
    this.filling = undefined;
    this.send(this.bucket.chunkKey(pack.name), Buffer.concat(parts, pack.bytes));
  }

  private send(key: string, body: Buffer): void {
    this.queue
      .add(async () => {
        if (this.failure !== undefined) return;
        this.signal.throwIfAborted();
        await this.bucket.put(key, body, this.signal);
        this.sent += body.length;
      })
      .catch((error: unknown) => {
        this.failure ??= { error };
        this.queue.clear();
      });
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}
