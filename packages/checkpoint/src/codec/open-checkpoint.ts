import { createDecipheriv } from "node:crypto";
import { pipeline, type Readable, Transform, type TransformCallback } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import {
  corrupt,
  HEADER_BYTES,
  MAX_SEGMENTS,
  nonceFor,
  openHeader,
  parseCheckpointKey,
  SEALED_SEGMENT_BYTES,
  type SegmentKeys,
  TAG_BYTES,
} from "./checkpoint-format.js";
import type { CheckpointKey } from "./checkpoint-key.js";

/**
 * Opens a sealed checkpoint into the plain tar stream. The header is checked
 * first, so a wrong key, home or revision fails before any body byte is
 * read; after that each segment's plaintext is released only once its tag
 * verified. Any tampering (a flipped bit, a dropped, repeated or reordered
 * segment, truncation anywhere, bytes appended) fails the stream with
 * CHECKPOINT_CORRUPT, and `restoreHome` then leaves the previous home as it was.
 */
export function openCheckpoint(sealed: AsyncIterable<Uint8Array>, key: CheckpointKey): Readable {
  const checked = parseCheckpointKey(key);
  if (typeof (sealed as AsyncIterable<Uint8Array>)?.[Symbol.asyncIterator] !== "function")
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      "Invalid sealed checkpoint: expected a Readable or an async iterable.",
    );
  const opener = new OpenStream(checked);
  pipeline(sealed, opener, () => {});
  return opener;
}

class OpenStream extends Transform {
  /** A full sealed segment held until more data shows it is not the last; often a view into the input. */
  private held: Buffer | undefined;
  private partial = Buffer.allocUnsafe(SEALED_SEGMENT_BYTES);
  private filled = 0;
  private index = 0;
  private header: { keys: SegmentKeys; noncePrefix: Buffer } | undefined;

  constructor(private readonly key: CheckpointKey) {
    super({ readableHighWaterMark: 4 * SEALED_SEGMENT_BYTES });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      let offset = 0;
      if (this.header === undefined) {
        const count = Math.min(HEADER_BYTES - this.filled, chunk.length);
        chunk.copy(this.partial, this.filled, 0, count);
        this.filled += count;
        offset = count;
        if (this.filled < HEADER_BYTES) {
          callback();
          return;
        }
        this.header = openHeader(this.key, this.partial.subarray(0, HEADER_BYTES));
        this.filled = 0;
      }
      while (offset < chunk.length) {
        if (this.held !== undefined) {
          this.openSegment(this.held, false);
          this.held = undefined;
        }
        if (this.filled === 0 && chunk.length - offset >= SEALED_SEGMENT_BYTES) {
          this.held = chunk.subarray(offset, offset + SEALED_SEGMENT_BYTES);
          offset += SEALED_SEGMENT_BYTES;
          continue;
        }
        const count = Math.min(SEALED_SEGMENT_BYTES - this.filled, chunk.length - offset);
        chunk.copy(this.partial, this.filled, offset, offset + count);
        this.filled += count;
        offset += count;
        if (this.filled === SEALED_SEGMENT_BYTES) {
          this.held = this.partial;
          this.partial = Buffer.allocUnsafe(SEALED_SEGMENT_BYTES);
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
      if (this.header === undefined) throw corrupt("it is shorter than its header (truncated)");
      // The last segment is what remains: the partial one, or else the held full one.
      if (this.held !== undefined && this.filled > 0) {
        this.openSegment(this.held, false);
        this.held = undefined;
      }
      const last = this.held ?? this.partial.subarray(0, this.filled);
      if (this.index === 0 && last.length === 0) throw corrupt("it has a header but no segments (truncated)");
      if (last.length < TAG_BYTES)
        throw corrupt(`its final segment is ${last.length} bytes, shorter than a tag (truncated)`, {
          segment: this.index,
        });
      // Only an empty home seals to an empty segment, and then as the first one.
      if (last.length === TAG_BYTES && this.index > 0)
        throw corrupt("it ends with an empty segment after data (truncated or spliced)", { segment: this.index });
      this.openSegment(last, true);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private openSegment(sealed: Buffer, last: boolean): void {
    const header = this.header as { keys: SegmentKeys; noncePrefix: Buffer };
    if (this.index >= MAX_SEGMENTS) throw corrupt("it has more than 2^32 segments");
    const bodyLength = sealed.length - TAG_BYTES;
    // authTagLength pins the tag to 16 bytes: without it Node accepts tags as short as 4.
    const decipher = createDecipheriv(
      "aes-256-gcm",
      header.keys.segmentKey,
      nonceFor(header.noncePrefix, this.index, last),
      { authTagLength: TAG_BYTES },
    );
    decipher.setAuthTag(sealed.subarray(bodyLength));
    const plain = decipher.update(sealed.subarray(0, bodyLength));
    try {
      decipher.final();
    } catch {
      throw corrupt(
        last
          ? `segment ${this.index} fails its integrity check as the last segment (damaged, truncated, reordered or with bytes appended)`
          : `segment ${this.index} fails its integrity check (damaged, reordered, repeated or from another checkpoint)`,
        { segment: this.index },
      );
    }
    // Released only now, after final() verified the tag.
    if (plain.length > 0) this.push(plain);
    this.index++;
  }
}
