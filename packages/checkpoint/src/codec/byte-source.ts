/**
 * Reads exact byte counts from a stream of chunks without copying more than
 * needed: `take` returns views into the chunks when it can. Holds at most
 * what the caller asked for plus one chunk.
 */
export class ByteSource {
  private readonly chunks: Buffer[] = [];
  private head = 0;
  private buffered = 0;
  private ended = false;
  private readonly iterator: AsyncIterator<Uint8Array>;
  /** Sees every byte handed out, in order (a checker passing the archive on as it reads it). */
  tap: ((bytes: Buffer) => void) | undefined;

  constructor(input: AsyncIterable<Uint8Array>) {
    this.iterator = input[Symbol.asyncIterator]();
  }

  /** Waits until `n` bytes are buffered or the input ended; returns what is buffered. */
  async fill(n: number): Promise<number> {
    while (this.buffered < n && !this.ended) {
      const next = await this.iterator.next();
      if (next.done) {
        this.ended = true;
        break;
      }
      const chunk = Buffer.isBuffer(next.value)
        ? next.value
        : Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      if (chunk.length === 0) continue;
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    return this.buffered;
  }

  /** Exactly `n` bytes, or undefined when the input ends first. */
  async read(n: number): Promise<Buffer | undefined> {
    if ((await this.fill(n)) < n) return undefined;
    return this.take(n);
  }

  /** Up to `n` bytes (at least one), or undefined at the end of the input. */
  async readSome(n: number): Promise<Buffer | undefined> {
    if ((await this.fill(1)) === 0) return undefined;
    const first = this.chunks[0] as Buffer;
    return this.take(Math.min(n, first.length - this.head));
  }

  /** Stops reading; the input's own cleanup runs. */
  async close(): Promise<void> {
    this.ended = true;
    await this.iterator.return?.();
  }

  private take(n: number): Buffer {
    // An empty file's data: nothing to cut, and the chunks may all be spent
    // (its header ended exactly at a chunk boundary).
    const out = n === 0 ? Buffer.alloc(0) : this.cut(n);
    this.tap?.(out);
    return out;
  }

  private cut(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    if (first.length - this.head >= n) {
      const out = first.subarray(this.head, this.head + n);
      this.advance(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0] as Buffer;
      const count = Math.min(n - filled, chunk.length - this.head);
      chunk.copy(out, filled, this.head, this.head + count);
      filled += count;
      this.advance(count);
    }
    return out;
  }

  private advance(n: number): void {
    this.buffered -= n;
    this.head += n;
    if (this.head === (this.chunks[0] as Buffer).length) {
      this.chunks.shift();
      this.head = 0;
    }
  }
}
