import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { z } from "zod";
import type { CheckpointKey } from "./checkpoint-key.js";

/**
 * The sealed checkpoint format, version 1 (byte layout and test vectors in
 * this folder's README):
 *
 *   header  = magic(8) || salt(32) || noncePrefix(7) || headerMac(32)
 *   segment = AES-256-GCM(segmentKey, nonce, plaintext) || tag(16)
 *   nonce   = noncePrefix(7) || uint32be(index) || lastFlag(1)
 *
 * segmentKey || macKey = HKDF-SHA256(dataKey, salt, info, 64) with info
 * binding the storage id and the revision, and
 * headerMac = HMAC-SHA256(macKey, magic || salt || noncePrefix), which
 * commits to the key (GCM alone does not), so a wrong key, home or revision
 * fails on the header, before any body byte.
 */
export const MAGIC = Buffer.from("ac-ckpt\u0001", "latin1");
export const SALT_BYTES = 32;
export const NONCE_PREFIX_BYTES = 7;
export const MAC_BYTES = 32;
export const HEADER_BYTES = MAGIC.length + SALT_BYTES + NONCE_PREFIX_BYTES + MAC_BYTES;
/** Plaintext bytes per segment; every segment but the last is exactly this long. */
export const SEGMENT_BYTES = 64 * 1024;
export const TAG_BYTES = 16;
export const SEALED_SEGMENT_BYTES = SEGMENT_BYTES + TAG_BYTES;
/** The segment index is 32 bits: 2^32 segments of 64 KiB is 256 TiB. */
export const MAX_SEGMENTS = 2 ** 32;
const INFO_LABEL = Buffer.from("agent-computer checkpoint v1\u0000", "latin1");

export const checkpointKeySchema = z.object({
  dataKey: z.custom<Uint8Array>((v) => v instanceof Uint8Array && v.byteLength === 32, {
    message: "expected a 32-byte Uint8Array",
  }),
  storageId: z.string().min(1).max(1024),
  revision: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});

export interface SegmentKeys {
  readonly segmentKey: Buffer;
  readonly macKey: Buffer;
}

export function parseCheckpointKey(key: unknown): CheckpointKey {
  return parseInput(checkpointKeySchema, key, "checkpoint key");
}

/** info = label || uint16be(len(storageId)) || storageId || uint64be(revision). */
export function keyInfo(storageId: string, revision: number): Buffer {
  const id = Buffer.from(storageId, "utf8");
  const info = Buffer.alloc(INFO_LABEL.length + 2 + id.length + 8);
  INFO_LABEL.copy(info, 0);
  info.writeUInt16BE(id.length, INFO_LABEL.length);
  id.copy(info, INFO_LABEL.length + 2);
  info.writeBigUInt64BE(BigInt(revision), INFO_LABEL.length + 2 + id.length);
  return info;
}

export function deriveKeys(key: CheckpointKey, salt: Buffer): SegmentKeys {
  const okm = Buffer.from(hkdfSync("sha256", key.dataKey, salt, keyInfo(key.storageId, key.revision), 64));
  return { segmentKey: okm.subarray(0, 32), macKey: okm.subarray(32, 64) };
}

export function headerMac(macKey: Buffer, salt: Buffer, noncePrefix: Buffer): Buffer {
  return createHmac("sha256", macKey).update(MAGIC).update(salt).update(noncePrefix).digest();
}

export function buildHeader(keys: SegmentKeys, salt: Buffer, noncePrefix: Buffer): Buffer {
  return Buffer.concat([MAGIC, salt, noncePrefix, headerMac(keys.macKey, salt, noncePrefix)]);
}

/** Checks a header and derives the keys it commits to, or throws CHECKPOINT_CORRUPT. */
export function openHeader(key: CheckpointKey, header: Buffer): { keys: SegmentKeys; noncePrefix: Buffer } {
  if (!header.subarray(0, MAGIC.length).equals(MAGIC))
    throw corrupt("it does not start with the checkpoint format's magic bytes (not a sealed checkpoint, or version 1)");
  const saltEnd = MAGIC.length + SALT_BYTES;
  const salt = header.subarray(MAGIC.length, saltEnd);
  const noncePrefix = header.subarray(saltEnd, saltEnd + NONCE_PREFIX_BYTES);
  const mac = header.subarray(saltEnd + NONCE_PREFIX_BYTES, HEADER_BYTES);
  const keys = deriveKeys(key, salt);
  if (!timingSafeEqual(mac, headerMac(keys.macKey, salt, noncePrefix)))
    throw corrupt(
      "its header does not match this home's data key, storage id and revision (another home's or revision's checkpoint, a wrong key, or a damaged header)",
    );
  return { keys, noncePrefix: Buffer.from(noncePrefix) };
}

export function nonceFor(noncePrefix: Buffer, index: number, last: boolean): Buffer {
  const nonce = Buffer.allocUnsafe(12);
  noncePrefix.copy(nonce, 0);
  nonce.writeUInt32BE(index, NONCE_PREFIX_BYTES);
  nonce[11] = last ? 1 : 0;
  return nonce;
}

export function corrupt(reason: string, details?: Record<string, unknown>): AgentComputerError {
  return new AgentComputerError(
    "CHECKPOINT_CORRUPT",
    `The checkpoint cannot be opened: ${reason}. Nothing was restored from it.`,
    { details },
  );
}
