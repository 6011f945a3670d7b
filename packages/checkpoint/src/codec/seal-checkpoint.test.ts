import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { HEADER_BYTES, SEALED_SEGMENT_BYTES, SEGMENT_BYTES } from "./checkpoint-format.js";
import { openCheckpoint } from "./open-checkpoint.js";
import { sealCheckpoint, sealWith } from "./seal-checkpoint.js";

const seq = (n: number, start: number) => Buffer.from(Array.from({ length: n }, (_, i) => (start + i) & 0xff));
const key = { dataKey: randomBytes(32), storageId: "home-a", revision: 3 };

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function seal(plain: Buffer, k = key): Promise<Buffer> {
  return collect(sealCheckpoint(Readable.from([plain]), k));
}

/** Opens `sealed` split into odd chunks; resolves the plaintext or the error's code. */
async function open(sealed: Buffer, k = key): Promise<Buffer | string> {
  const pieces: Buffer[] = [];
  for (let i = 0; i < sealed.length; i += 7919) pieces.push(sealed.subarray(i, i + 7919));
  try {
    return await collect(openCheckpoint(Readable.from(pieces), k));
  } catch (error) {
    if (error instanceof AgentComputerError) return error.code;
    throw error;
  }
}

describe("sealCheckpoint / openCheckpoint", () => {
  it("matches the README's test vectors (cross-checked with Python's cryptography)", async () => {
    const vectorKey = { dataKey: seq(32, 0), storageId: "home-vector", revision: 7 };
    const cases: [Buffer, number, string][] = [
      [Buffer.from("hello, home\n"), 107, "237deb991a194b32fbb3e9b9b667f071c25e1515ac0ccffefd7c4bba0da3a929"],
      [Buffer.alloc(0), 95, "0bda56f1ea00d21776463a279b634408502bccf8a362498cdb16928d4e44b6cb"],
      [
        Buffer.from(Array.from({ length: 65636 }, (_, i) => i % 251)),
        65747,
        "7208aedd765384799d126be82b19577dce932fa4f0afbea7378e8216841c8f98",
      ],
    ];
    for (const [plain, length, digest] of cases) {
      const sealed = await collect(sealWith(Readable.from([plain]), vectorKey, seq(32, 0x40), seq(7, 0x80)));
      expect(sealed.length).toBe(length);
      expect(createHash("sha256").update(sealed).digest("hex")).toBe(digest);
      expect(sealed.subarray(0, HEADER_BYTES).toString("hex")).toBe(
        "61632d636b707401404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f808182838485868d30903cff8067328023a2bc0dfb2b1dcac8c27938419d39aca6e6cb70719019",
      );
      expect(await open(sealed, vectorKey)).toEqual(plain);
      if (plain.length === 12)
        expect(sealed.subarray(HEADER_BYTES).toString("hex")).toBe(
          "75370fa871769303df85e23567cadd11534b561c275c5bdcddf02e34",
        );
    }
  });

  it("round-trips sizes around the segment boundary, in any chunking", async () => {
    for (const size of [0, 1, SEGMENT_BYTES - 1, SEGMENT_BYTES, SEGMENT_BYTES + 1, 3 * SEGMENT_BYTES, 200_000]) {
      const plain = randomBytes(size);
      const sealed = await seal(plain);
      expect(sealed.length).toBe(HEADER_BYTES + Math.max(1, Math.ceil(size / SEGMENT_BYTES)) * 16 + size);
      expect(await open(sealed)).toEqual(plain);
    }
  });

  it("round-trips under chunkings that mix whole views, gathered small pieces and straddled tags", async () => {
    const plain = randomBytes(5 * SEGMENT_BYTES + 333);
    const sizes = [1, 7, 15, 16, 17, 8191, 8192, 8193, 65_535, SEALED_SEGMENT_BYTES, 100_000];
    const cut = (bytes: Buffer, seed: number) => {
      const pieces: Buffer[] = [];
      let n = seed;
      for (let i = 0; i < bytes.length; ) {
        n = (n * 1103515245 + 12345) % 2147483648;
        const size = sizes[n % sizes.length] as number;
        pieces.push(bytes.subarray(i, i + size));
        i += size;
      }
      return pieces;
    };
    for (let seed = 1; seed <= 6; seed++) {
      const sealed = await collect(sealCheckpoint(Readable.from(cut(plain, seed)), key));
      expect(sealed.length).toBe(HEADER_BYTES + 6 * 16 + plain.length);
      expect(await collect(openCheckpoint(Readable.from(cut(sealed, seed + 100)), key))).toEqual(plain);
      // A flipped bit in a tag that straddles pieces still fails.
      const tampered = Buffer.from(sealed);
      const tagByte = HEADER_BYTES + 2 * SEALED_SEGMENT_BYTES - 3;
      tampered[tagByte] = (tampered[tagByte] as number) ^ 0x40;
      const pieces = [
        tampered.subarray(0, tagByte - 7),
        tampered.subarray(tagByte - 7, tagByte + 1),
        tampered.subarray(tagByte + 1),
      ];
      const error = await collect(openCheckpoint(Readable.from(pieces), key)).catch((e: unknown) => e);
      expect(AgentComputerError.is(error, "CHECKPOINT_CORRUPT")).toBe(true);
    }
  });

  it("seals twice to different bytes (fresh salt and nonce prefix)", async () => {
    const plain = randomBytes(1000);
    expect((await seal(plain)).equals(await seal(plain))).toBe(false);
  });

  it("emits each ciphertext and tag as cipher.update and getAuthTag made them (no copy), in object mode", async () => {
    // 'data' events show the pushes; object mode keeps a reader's read() from concatenating them.
    const chunks: Buffer[] = [];
    const sealed = sealCheckpoint(Readable.from([randomBytes(3 * SEGMENT_BYTES + 5)]), key);
    sealed.on("data", (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => sealed.on("end", resolve));
    expect(sealed.readableObjectMode).toBe(true);
    expect(chunks.map((c) => c.length)).toEqual([
      HEADER_BYTES,
      SEGMENT_BYTES,
      16,
      SEGMENT_BYTES,
      16,
      SEGMENT_BYTES,
      16,
      5,
      16,
    ]);
    // An empty home: the header and one empty segment's tag.
    const empty: Buffer[] = [];
    for await (const chunk of sealCheckpoint(Readable.from([]), key)) empty.push(chunk);
    expect(empty.map((c) => c.length)).toEqual([HEADER_BYTES, 16]);
  });

  describe("every tampering fails with CHECKPOINT_CORRUPT", () => {
    const plain = randomBytes(2 * SEGMENT_BYTES + 1234);
    const sealedPromise = seal(plain);
    const segmentAt = (sealed: Buffer, i: number) =>
      sealed.subarray(HEADER_BYTES + i * SEALED_SEGMENT_BYTES, HEADER_BYTES + (i + 1) * SEALED_SEGMENT_BYTES);
    const header = (sealed: Buffer) => sealed.subarray(0, HEADER_BYTES);

    it("a flipped bit anywhere (header, body, tag)", async () => {
      const sealed = await sealedPromise;
      const positions = [0, 8, 40, 47, 78, HEADER_BYTES, HEADER_BYTES + SEGMENT_BYTES + 3, sealed.length - 1];
      for (let i = 0; i < 40; i++) positions.push(Math.floor(Math.random() * sealed.length));
      for (const position of positions) {
        const copy = Buffer.from(sealed);
        copy[position] = (copy[position] as number) ^ (1 << (position % 8));
        expect(await open(copy), `bit at ${position}`).toBe("CHECKPOINT_CORRUPT");
      }
    });

    it("a dropped, repeated or reordered segment", async () => {
      const sealed = await sealedPromise;
      const [s0, s1, s2] = [0, 1, 2].map((i) => segmentAt(sealed, i));
      const h = header(sealed);
      const last = sealed.subarray(HEADER_BYTES + 2 * SEALED_SEGMENT_BYTES);
      expect(s2?.equals(last)).toBe(true);
      for (const parts of [
        [h, s0, last],
        [h, s1, last],
        [h, s0, s0, s1, last],
        [h, s1, s0, last],
        [h, s0, s1, s1 ?? last],
      ]) {
        expect(await open(Buffer.concat(parts as Buffer[]))).toBe("CHECKPOINT_CORRUPT");
      }
    });

    it("truncation at any byte", async () => {
      const sealed = await sealedPromise;
      const cuts = new Set<number>([0, 1, HEADER_BYTES - 1, HEADER_BYTES, HEADER_BYTES + 1, HEADER_BYTES + 15]);
      for (const boundary of [1, 2]) {
        const at = HEADER_BYTES + boundary * SEALED_SEGMENT_BYTES;
        for (let d = -17; d <= 17; d++) cuts.add(at + d);
      }
      for (let i = 0; i < 40; i++) cuts.add(Math.floor(Math.random() * sealed.length));
      for (let i = 1; i <= 16; i++) cuts.add(sealed.length - i);
      for (const cut of cuts) {
        if (cut >= sealed.length) continue;
        expect(await open(sealed.subarray(0, cut)), `cut at ${cut}`).toBe("CHECKPOINT_CORRUPT");
      }
    });

    it("bytes appended", async () => {
      const sealed = await sealedPromise;
      for (const extra of [Buffer.alloc(1), randomBytes(16), randomBytes(SEALED_SEGMENT_BYTES), segmentAt(sealed, 0)])
        expect(await open(Buffer.concat([sealed, extra]))).toBe("CHECKPOINT_CORRUPT");
    });

    it("another revision's, another home's object, or a wrong key, before any body byte", async () => {
      const sealed = await sealedPromise;
      // Only the header is offered: the check cannot depend on the body.
      const onlyHeader = header(sealed);
      for (const other of [
        { ...key, revision: 4 },
        { ...key, storageId: "home-b" },
        { ...key, dataKey: randomBytes(32) },
      ]) {
        const error = await collect(openCheckpoint(Readable.from([onlyHeader]), other)).catch((e) => e);
        expect(error).toBeInstanceOf(AgentComputerError);
        expect(error.code).toBe("CHECKPOINT_CORRUPT");
        expect(error.message).toMatch(/header does not match/);
        expect(await open(sealed, other)).toBe("CHECKPOINT_CORRUPT");
      }
    });

    it("a header spliced onto another checkpoint's segments", async () => {
      const sealed = await sealedPromise;
      const other = await seal(plain);
      expect(await open(Buffer.concat([header(other), sealed.subarray(HEADER_BYTES)]))).toBe("CHECKPOINT_CORRUPT");
    });

    it("an exact multiple of 64 KiB with its last segment dropped", async () => {
      const sealed = await seal(randomBytes(3 * SEGMENT_BYTES));
      expect(sealed.length).toBe(HEADER_BYTES + 3 * SEALED_SEGMENT_BYTES);
      expect(await open(sealed.subarray(0, HEADER_BYTES + 2 * SEALED_SEGMENT_BYTES))).toBe("CHECKPOINT_CORRUPT");
    });

    it("a header-only stream, and a final segment shorter than a tag", async () => {
      const sealed = await sealedPromise;
      expect(await open(header(sealed))).toBe("CHECKPOINT_CORRUPT");
      expect(await open(sealed.subarray(0, HEADER_BYTES + 2 * SEALED_SEGMENT_BYTES + 15))).toBe("CHECKPOINT_CORRUPT");
      expect(await open(Buffer.alloc(0))).toBe("CHECKPOINT_CORRUPT");
    });

    it("releases no plaintext of a segment whose tag fails", async () => {
      const sealed = Buffer.from(await sealedPromise);
      const lastByte = HEADER_BYTES + SEALED_SEGMENT_BYTES - 1;
      sealed[lastByte] = (sealed[lastByte] as number) ^ 1; // the first segment's tag
      const received: Buffer[] = [];
      const error = await (async () => {
        for await (const chunk of openCheckpoint(Readable.from([sealed]), key)) received.push(chunk);
      })().catch((e) => e);
      expect(error.code).toBe("CHECKPOINT_CORRUPT");
      expect(received).toEqual([]);
    });
  });

  it("refuses a bad key with INVALID_ARGUMENT naming the path", () => {
    expect(() => sealCheckpoint(Readable.from([]), { ...key, dataKey: randomBytes(16) })).toThrow(/dataKey/);
    expect(() => openCheckpoint(Readable.from([]), { ...key, revision: -1 })).toThrow(/revision/);
  });

  it("carries a source error to the reader", async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error("source broke"));
      },
    });
    await expect(collect(sealCheckpoint(failing, key))).rejects.toThrow(/source broke/);
  });
});
