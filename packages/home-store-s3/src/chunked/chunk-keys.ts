import { hkdfSync } from "node:crypto";

/**
 * The three keys of a home's chunked checkpoints (format v2, README
 * "Format v2"), each derived from the home's data key with HKDF-SHA256,
 * salted with the storage id: names differ between homes even for equal
 * bytes, and a chunk or manifest of one home never opens under another's.
 */
export interface ChunkKeys {
  readonly storageId: string;
  /** HMAC-SHA256 key that names a chunk after its plaintext. */
  readonly nameKey: Buffer;
  /** AES-256-GCM key of the chunks. */
  readonly chunkKey: Buffer;
  /** AES-256-GCM key of the manifests (each also bound to its revision). */
  readonly manifestKey: Buffer;
}

export function chunkKeysOf(dataKey: Uint8Array, storageId: string): ChunkKeys {
  const derive = (label: string) =>
    Buffer.from(hkdfSync("sha256", dataKey, Buffer.from(storageId, "utf8"), `agent-computer home v2 ${label}`, 32));
  return { storageId, nameKey: derive("chunk names"), chunkKey: derive("chunks"), manifestKey: derive("manifests") };
}
