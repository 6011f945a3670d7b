import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import type { ChunkKeys } from "./chunk-keys.js";

/** A sealed chunk: magic, 12-byte random nonce, ciphertext, 16-byte tag. */
export const CHUNK_MAGIC = Buffer.from("ac-chnk\u0002", "latin1");
const NONCE = 12;
const TAG = 16;
/** Largest piece of a file one chunk holds: a 1 MiB edit rewrites at most two. */
export const CHUNK_BYTES = 1024 * 1024;
/** What sealing adds to a chunk's plaintext: magic, nonce and tag. */
export const SEALED_CHUNK_OVERHEAD = CHUNK_MAGIC.length + NONCE + TAG;
export const chunkNamePattern = /^[0-9a-f]{64}$/;

/** The chunk's name: HMAC-SHA256 of its plaintext under the home's name key, hex. */
export function chunkName(keys: ChunkKeys, plain: Uint8Array): string {
  return createHmac("sha256", keys.nameKey).update(plain).digest("hex");
}

/** AAD binds a sealed chunk to its home and name: a swapped or renamed chunk does not open. */
function aadOf(keys: ChunkKeys, name: string): Buffer {
  return Buffer.concat([CHUNK_MAGIC, Buffer.from(keys.storageId, "utf8"), Buffer.from([0]), Buffer.from(name, "hex")]);
}

export function sealChunk(keys: ChunkKeys, name: string, plain: Uint8Array): Buffer {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv("aes-256-gcm", keys.chunkKey, nonce, { authTagLength: TAG });
  cipher.setAAD(aadOf(keys, name));
  const body = cipher.update(plain);
  cipher.final();
  return Buffer.concat([CHUNK_MAGIC, nonce, body, cipher.getAuthTag()]);
}

/**
 * Opens a chunk fetched under `name` and checks it is exactly the `size`
 * bytes whose HMAC is `name`, or throws CHECKPOINT_CORRUPT: a flipped,
 * truncated, padded, renamed or other home's chunk never yields bytes.
 */
export function openChunk(keys: ChunkKeys, name: string, size: number, sealed: Buffer): Buffer {
  if (sealed.length !== CHUNK_MAGIC.length + NONCE + size + TAG)
    throw corruptChunk(name, `it holds ${sealed.length} bytes, not the ${size} its manifest names plus the seal`);
  if (!sealed.subarray(0, CHUNK_MAGIC.length).equals(CHUNK_MAGIC))
    throw corruptChunk(name, "it does not start with the chunk format's magic bytes");
  const nonce = sealed.subarray(CHUNK_MAGIC.length, CHUNK_MAGIC.length + NONCE);
  const decipher = createDecipheriv("aes-256-gcm", keys.chunkKey, nonce, { authTagLength: TAG });
  decipher.setAAD(aadOf(keys, name));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG));
  // GCM's final() only checks the tag (it returns no bytes): the update's
  // output is the plaintext, released below only once final() passed.
  const plain = decipher.update(sealed.subarray(CHUNK_MAGIC.length + NONCE, sealed.length - TAG));
  try {
    decipher.final();
  } catch {
    throw corruptChunk(name, "it does not authenticate under this home's key (tampered, or another home's chunk)");
  }
  if (!isChunk(keys, name, plain)) throw corruptChunk(name, "its content does not match its name");
  return plain;
}

/** True when `plain` is the chunk `name` (constant-time compare). */
export function isChunk(keys: ChunkKeys, name: string, plain: Uint8Array): boolean {
  const named = Buffer.from(name, "hex");
  const digest = createHmac("sha256", keys.nameKey).update(plain).digest();
  return named.length === digest.length && timingSafeEqual(digest, named);
}

export function corruptChunk(name: string, reason: string): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The checkpoint cannot be restored: chunk ${name.slice(0, 12)}… is unusable: ${reason}. Nothing was restored from it.`,
    { details: { chunk: name } },
  );
}
