/**
 * Splits the engine's multiplexed exec output (a frame is 1 byte stream id,
 * 3 zero bytes, a big-endian uint32 length, then the payload) into stdout
 * and stderr bytes, exactly as written: no decoding.
 */
export class EngineOutputDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: "stdout" | "stderr", payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      const kind = this.pending[0];
      const payload = this.pending.subarray(8, 8 + size);
      this.pending = this.pending.subarray(8 + size);
      // 0 is stdin echoed back (never with Tty off); 2 is stderr; 1 stdout.
      if (kind === 1 || kind === 2) this.onFrame(kind === 2 ? "stderr" : "stdout", payload);
    }
  }
}
