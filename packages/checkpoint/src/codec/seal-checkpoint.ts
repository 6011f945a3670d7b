import { createCipheriv, randomBytes } from "node:crypto";
import { pipeline, type Readable, Transform, type TransformCallback } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import {
  buildHeader,
  deriveKeys,
  MAX_SEGMENTS,
  NONCE_PREFIX_BYTES,
  nonceFor,
  parseCheckpointKey,
  SALT_BYTES,
  SEGMENT_BYTES,
  type SegmentKeys,
  TAG_BYTES,
} from "./checkpoint-format.js";
import type { CheckpointKey } from "./checkpoint-key.js";

/**
 * Seals a plain home tar for storage: AES-256-GCM in 64 KiB segments, each
 * with its own 16-byte tag, under a key derived for this checkpoint from the
 * home's data key, its storage id and revision (layout: checkpoint-format.ts
 * and the README). The result streams with bounded memory: one segment is
 * held until the next byte shows whether it is the last.
 */
export function sealCheckpoint(plainTar: AsyncIterable<Uint8Array>, key: CheckpointKey): Readable {
  return sealWith(plainTar, key, randomBytes(SALT_BYTES), randomBytes(NONCE_PREFIX_BYTES));
}

/** `sealCheckpoint` with a chosen salt and nonce prefix: for test vectors only. */
export function sealWith(
  plainTar: AsyncIterable<Uint8Array>,
  key: CheckpointKey,
  salt: Buffer,
  noncePrefix: Buffer,
): Readable {
  const checked = parseCheckpointKey(key);
  if (typeof (plainTar as AsyncIterable<Uint8Array>)?.[Symbol.asyncIterator] !== "function")
    throw new AgentComputerError("INVALID_ARGUMENT", "Invalid plain tar: expected a Readable or an async iterable.");
  const keys = deriveKeys(checked, salt);
  const sealer = new SealStream(keys, buildHeader(keys, salt, noncePrefix), noncePrefix);
  // pipeline destroys both sides on an error and carries it to the reader.
  pipeline(plainTar, sealer, () => {});
  return sealer;
}

class SealStream extends Transform {
  /** A full segment held until more data shows it is not the last; often a view into the input (no copy). */
  private held: Buffer | undefined;
  private partial = Buffer.allocUnsafe(SEGMENT_BYTES);
  private filled = 0;
  private index = 0;
  /**
   * Output segments are carved from 1 MiB slabs: one allocation per sixteen
   * segments instead of one each, which showed as garbage-collection time.
   */
  private slab = Buffer.allocUnsafe(0);
  private slabUsed = 0;

  constructor(
    private readonly keys: SegmentKeys,
    header: Buffer,
    private readonly noncePrefix: Buffer,
  ) {
    super({ readableHighWaterMark: 4 * SEGMENT_BYTES });
    this.push(header);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      let offset = 0;
      while (offset < chunk.length) {
        if (this.held !== undefined) {
          this.pushSegment(this.held, false);
          this.held = undefined;
        }
        if (this.filled === 0 && chunk.length - offset >= SEGMENT_BYTES) {
          // Whole segments of the input are sealed in place, without a copy.
          this.held = chunk.subarray(offset, offset + SEGMENT_BYTES);
          offset += SEGMENT_BYTES;
          continue;
        }
        const count = Math.min(SEGMENT_BYTES - this.filled, chunk.length - offset);
        chunk.copy(this.partial, this.filled, offset, offset + count);
        this.filled += count;
        offset += count;
        if (this.filled === SEGMENT_BYTES) {
          this.held = this.partial;
          this.partial = Buffer.allocUnsafe(SEGMENT_BYTES);
          this.filled = 0;
        }
      }
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      if (this.held !== undefined) this.pushSegment(this.held, this.filled === 0);
      // The last segment: the partial one, or an empty one for an empty input.
      if (this.held === undefined || this.filled > 0) this.pushSegment(this.partial.subarray(0, this.filled), true);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private pushSegment(plain: Buffer, last: boolean): void {
    if (this.index >= MAX_SEGMENTS)
      throw new AgentComputerError("LIMIT_EXCEEDED", "A checkpoint holds at most 2^32 segments (256 TiB).");
    const cipher = createCipheriv("aes-256-gcm", this.keys.segmentKey, nonceFor(this.noncePrefix, this.index, last), {
      authTagLength: TAG_BYTES,
    });
    // Ciphertext and tag leave as one buffer: a push per piece halves throughput.
    const sealed = this.carve(plain.length + TAG_BYTES);
    cipher.update(plain).copy(sealed, 0);
    cipher.final();
    cipher.getAuthTag().copy(sealed, plain.length);
    this.push(sealed);
    this.index++;
  }

  private carve(length: number): Buffer {
    if (this.slab.length - this.slabUsed < length) {
      this.slab = Buffer.allocUnsafe(Math.max(length, 16 * (SEGMENT_BYTES + TAG_BYTES)));
      this.slabUsed = 0;
    }
    const out = this.slab.subarray(this.slabUsed, this.slabUsed + length);
    this.slabUsed += length;
    return out;
  }
}
