import type { Readable } from "node:stream";
import type { AgentComputerError } from "@agent-computer/core";
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";

/**
 * Reads a small bucket object (a manifest, a chunk, a pointer, a deletion
 * mark) only if it is no larger than `maxBytes`. Whoever can write the
 * bucket chooses these objects' sizes: reading one whole before checking
 * held a 600 MB object in memory (+618 MiB RSS, issue 45, finding 7). The
 * response's Content-Length is checked before a byte of the body is read
 * (the body is then dropped, which costs no more than a HEAD), and the
 * body is counted as it streams, for a server that states no length or a
 * wrong one.
 */
export interface CappedRead {
  s3: S3Client;
  bucket: string;
  key: string;
  maxBytes: number;
  /** An HTTP Range, as `bytes=0-7`. */
  range?: string | undefined;
  signal?: AbortSignal | undefined;
  /** The error for an object over `maxBytes` (its size when known). */
  tooLarge: (size: number | undefined) => AgentComputerError;
}

/** The object's bytes; the SDK's own errors pass through for the caller to type. */
export async function readCappedObject(read: CappedRead): Promise<Buffer> {
  const result = await read.s3.send(new GetObjectCommand({ Bucket: read.bucket, Key: read.key, Range: read.range }), {
    abortSignal: read.signal,
  });
  const body = result.Body as (Readable & AsyncIterable<Uint8Array>) | undefined;
  if (body === undefined) return Buffer.alloc(0);
  const stated = result.ContentLength;
  if (stated !== undefined && stated > read.maxBytes) {
    body.destroy();
    throw read.tooLarge(stated);
  }
  const parts: Uint8Array[] = [];
  let length = 0;
  try {
    for await (const part of body) {
      length += part.byteLength;
      if (length > read.maxBytes) throw read.tooLarge(undefined);
      parts.push(part);
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(parts);
}
