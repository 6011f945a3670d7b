import type { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { CLEAN_UP_TIMEOUT_MS, type StoreBucket } from "./store-bucket.js";

export interface MultipartUpload {
  readonly key: string;
  readonly body: Readable;
  readonly partBytes: number;
  readonly partConcurrency: number;
  /** Ends every request of the upload at once (the operation's deadline or abort). */
  readonly signal: AbortSignal;
  /** Awaited before each part is sent (the store's "uploading" stage). */
  readonly onPart: (part: number, bytes: number) => Promise<void>;
}

/**
 * Streams `body` as a multipart upload, `partConcurrency` parts in flight,
 * so memory stays near `partBytes` x (`partConcurrency` + 1) whatever the
 * home's size. On any failure the upload is aborted and no object appears.
 * Returns the bytes uploaded.
 */
export async function uploadMultipart(bucket: StoreBucket, upload: MultipartUpload): Promise<number> {
  const { key, body, signal } = upload;
  const sent = { abortSignal: signal };
  const created = await bucket.call("starting an upload", () =>
    bucket.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket.bucket, Key: key }), sent),
  );
  const uploadId = created.UploadId as string;
  const parts: { ETag: string; PartNumber: number }[] = [];
  const inFlight = new Set<Promise<void>>();
  let bytes = 0;
  let partNumber = 0;
  try {
    for await (const part of partsOf(body, upload.partBytes)) {
      partNumber++;
      bytes += part.length;
      await upload.onPart(partNumber, bytes);
      const number = partNumber;
      const sending: Promise<void> = bucket
        .call(`uploading part ${number}`, () =>
          bucket.s3.send(
            new UploadPartCommand({
              Bucket: bucket.bucket,
              Key: key,
              UploadId: uploadId,
              PartNumber: number,
              Body: part,
              ContentLength: part.length,
            }),
            sent,
          ),
        )
        .then((result) => {
          parts[number - 1] = { ETag: result.ETag as string, PartNumber: number };
          inFlight.delete(sending);
        });
      // Failures surface through Promise.race/all below; this only keeps Node from calling them unhandled.
      sending.catch(() => {});
      inFlight.add(sending);
      if (inFlight.size >= upload.partConcurrency) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    await bucket.call("completing an upload", () =>
      bucket.s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
        sent,
      ),
    );
    return bytes;
  } catch (error) {
    body.destroy();
    await Promise.allSettled(inFlight);
    // Its own bound: the operation's signal may be what ended it, and a stalled abort must not hold the error.
    await bucket.s3
      .send(new AbortMultipartUploadCommand({ Bucket: bucket.bucket, Key: key, UploadId: uploadId }), {
        abortSignal: AbortSignal.timeout(CLEAN_UP_TIMEOUT_MS),
      })
      .catch(() => {});
    throw error;
  }
}

/** Cuts a stream into parts of exactly `size` bytes (the last one shorter), one copy per part. */
async function* partsOf(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let chunks: Buffer[] = [];
  let filled = 0;
  for await (const chunk of source) {
    let rest = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (filled + rest.length >= size) {
      const take = size - filled;
      chunks.push(rest.subarray(0, take));
      yield Buffer.concat(chunks, size);
      rest = rest.subarray(take);
      chunks = [];
      filled = 0;
    }
    if (rest.length > 0) {
      // A view, not a copy: the sealer hands on node:crypto's own buffers and never reuses one.
      chunks.push(rest);
      filled += rest.length;
    }
  }
  if (filled > 0) yield Buffer.concat(chunks, filled);
}
