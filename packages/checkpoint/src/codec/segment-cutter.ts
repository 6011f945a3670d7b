/**
 * Cuts a stream of chunks into segments of exactly `size` bytes without
 * copying them: a segment is a list of views into the input chunks, handed
 * to the cipher piece by piece (AES-GCM takes its input in any number of
 * `update` calls). Input chunks shorter than `minView` are gathered by copy
 * into one buffer, so a stream of tiny chunks does not become thousands of
 * cipher calls per segment; the short remainder of a large chunk stays a
 * view (one more cipher call, no allocation).
 *
 * The last complete segment is held until a following byte exists, because
 * only then is it known not to be the last one (the nonce says which is).
 * Views keep the input chunks they point into alive; at most two segments'
 * worth of them are referenced at a time. The input must not be changed
 * after it was handed in (streams do not reuse chunks they passed on).
 */
export class SegmentCutter {
  private pieces: Buffer[] = [];
  private filled = 0;
  /** A buffer gathering small pieces of the current segment, sized to what the segment still lacks. */
  private gather: Buffer | undefined;
  private gathered = 0;
  private held: Buffer[] | undefined;

  constructor(
    private readonly size: number,
    private readonly minView = 8 * 1024,
  ) {}

  /** Feeds a chunk; `onSegment` gets each complete segment that is known not to be the last. */
  push(chunk: Buffer, onSegment: (pieces: Buffer[]) => void): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.held !== undefined) {
        const held = this.held;
        this.held = undefined;
        onSegment(held);
      }
      const take = Math.min(this.size - this.filled, chunk.length - offset);
      this.append(chunk, offset, take, chunk.length < this.minView);
      offset += take;
      if (this.filled === this.size) {
        this.held = this.pieces;
        this.pieces = [];
        this.filled = 0;
        this.gather = undefined;
      }
    }
  }

  /**
   * At the end of the input: the segments still to be handled, the last one
   * last (`[held]`, `[held, partial]` or `[partial]`; the partial one may be
   * empty, when nothing at all was pushed or the input ended on a boundary
   * with nothing held).
   */
  finish(): Buffer[][] {
    const out: Buffer[][] = [];
    if (this.held !== undefined) out.push(this.held);
    if (this.held === undefined || this.filled > 0) out.push(this.pieces);
    this.held = undefined;
    this.pieces = [];
    this.filled = 0;
    this.gather = undefined;
    return out;
  }

  /** Bytes of the segment being filled (not counting a held one). */
  get partialBytes(): number {
    return this.filled;
  }

  /** True while a complete segment waits for the next byte. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  private append(chunk: Buffer, offset: number, length: number, small: boolean): void {
    if (!small) {
      this.gather = undefined;
      this.pieces.push(chunk.subarray(offset, offset + length));
    } else {
      if (this.gather === undefined) {
        this.gather = Buffer.allocUnsafe(this.size - this.filled);
        this.gathered = 0;
        this.pieces.push(this.gather.subarray(0, 0));
      }
      chunk.copy(this.gather, this.gathered, offset, offset + length);
      this.gathered += length;
      this.pieces[this.pieces.length - 1] = this.gather.subarray(0, this.gathered);
    }
    this.filled += length;
  }
}

/** Total length of a list of pieces. */
export function lengthOf(pieces: readonly Buffer[]): number {
  let n = 0;
  for (const piece of pieces) n += piece.length;
  return n;
}

/**
 * Splits a sealed segment's pieces into its ciphertext pieces and its
 * `tagBytes`-byte tag (copied only when the tag straddles pieces).
 */
export function splitTag(pieces: readonly Buffer[], tagBytes: number): { body: Buffer[]; tag: Buffer } {
  const total = lengthOf(pieces);
  const bodyLength = total - tagBytes;
  const body: Buffer[] = [];
  let seen = 0;
  let tagStart = -1;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i] as Buffer;
    if (seen + piece.length <= bodyLength) {
      body.push(piece);
      seen += piece.length;
      continue;
    }
    const inBody = bodyLength - seen;
    if (inBody > 0) body.push(piece.subarray(0, inBody));
    tagStart = i;
    break;
  }
  const first = pieces[tagStart] as Buffer;
  const offset = bodyLength - seen;
  if (first.length - offset >= tagBytes) return { body, tag: first.subarray(offset, offset + tagBytes) };
  const tag = Buffer.allocUnsafe(tagBytes);
  let filled = first.copy(tag, 0, offset);
  for (let i = tagStart + 1; filled < tagBytes; i++) filled += (pieces[i] as Buffer).copy(tag, filled);
  return { body, tag };
}
