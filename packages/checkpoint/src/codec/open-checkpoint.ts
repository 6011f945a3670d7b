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
import { lengthOf, SegmentCutter, splitTag } from "./segment-cutter.js";

/**
 * Opens a sealed checkpoint into the plain tar stream. The header is checked
 * first, so a wrong key, home or revision fails before any body byte is
 * read; after that each segment's plaintext is released only once its tag
 * verified. Any tampering (a flipped bit, a dropped, repeated or reordered
 * segment, truncation anywhere, bytes appended) fails the stream with
 * CHECKPOINT_CORRUPT, and `restoreHome` then leaves the previous home as it was.
 * Like the sealer, an object-mode Readable of Buffers: iterate or pipe it.
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
  /** Gathers the header; after it, segments are cut as views into the input (SegmentCutter). */
  private headerBytes = Buffer.allocUnsafe(HEADER_BYTES);
  private headerFilled = 0;
  private readonly cutter = new SegmentCutter(SEALED_SEGMENT_BYTES);
  private index = 0;
  private header: { keys: SegmentKeys; noncePrefix: Buffer } | undefined;
  private readonly openOne = (pieces: Buffer[]) => this.openSegment(pieces, false);

  constructor(private readonly key: CheckpointKey) {
    // Object mode, the plaintext pushed as the decipher made it: a byte-mode
    // reader's read() would concatenate (copy) what is buffered.
    super({ readableObjectMode: true, readableHighWaterMark: 32 });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      let rest = chunk;
      if (this.header === undefined) {
        const count = Math.min(HEADER_BYTES - this.headerFilled, chunk.length);
        chunk.copy(this.headerBytes, this.headerFilled, 0, count);
        this.headerFilled += count;
        if (this.headerFilled < HEADER_BYTES) {
          callback();
          return;
        }
        this.header = openHeader(this.key, this.headerBytes);
        rest = chunk.subarray(count);
      }
      this.cutter.push(rest, this.openOne);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      if (this.header === undefined) throw corrupt("it is shorter than its header (truncated)");
      // The last segment is what remains: the partial one, or else the held full one.
      const rest = this.cutter.finish();
      for (let i = 0; i < rest.length - 1; i++) this.openSegment(rest[i] as Buffer[], false);
      const last = rest[rest.length - 1] as Buffer[];
      const length = lengthOf(last);
      if (this.index === 0 && length === 0) throw corrupt("it has a header but no segments (truncated)");
      if (length < TAG_BYTES)
        throw corrupt(`its final segment is ${length} bytes, shorter than a tag (truncated)`, {
          segment: this.index,
        });
      // Only an empty home seals to an empty segment, and then as the first one.
      if (length === TAG_BYTES && this.index > 0)
        throw corrupt("it ends with an empty segment after data (truncated or spliced)", { segment: this.index });
      this.openSegment(last, true);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private openSegment(pieces: Buffer[], last: boolean): void {
    const header = this.header as { keys: SegmentKeys; noncePrefix: Buffer };
    if (this.index >= MAX_SEGMENTS) throw corrupt("it has more than 2^32 segments");
    const { body, tag } = splitTag(pieces, TAG_BYTES);
    // authTagLength pins the tag to 16 bytes: without it Node accepts tags as short as 4.
    const decipher = createDecipheriv(
      "aes-256-gcm",
      header.keys.segmentKey,
      nonceFor(header.noncePrefix, this.index, last),
      { authTagLength: TAG_BYTES },
    );
    decipher.setAuthTag(tag);
    const plain =
      body.length === 1 ? [decipher.update(body[0] as Buffer)] : body.map((piece) => decipher.update(piece));
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
    for (const piece of plain) if (piece.length > 0) this.push(piece);
    this.index++;
  }
}
