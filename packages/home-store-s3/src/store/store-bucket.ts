import type { Readable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import {
  AbortMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { readCappedObject } from "../capped-object-read.js";
import { ChunkBucket, type ListedObject } from "../chunked/chunk-bucket.js";
import { MAX_MANIFEST_BYTES } from "../chunked/sealed-manifest.js";
import { MAX_POINTER_BYTES } from "../committed-pointer.js";
import { deleteBucketKeys } from "../delete-bucket-keys.js";
import { manifestTooLarge } from "../stored-revision-errors.js";

/** Names the pointer object that says which attempt won a revision. */
export const COMMITTED = "committed";
/** A clean-up request after a failure (aborting an upload) gets this long of its own. */
export const CLEAN_UP_TIMEOUT_MS = 10_000;

/** One object under `homes/`, as the key names it. */
export interface StoredObject {
  readonly key: string;
  readonly storageId: string;
  readonly revision: number;
  /** The attempt id, or "committed" for a revision's pointer. */
  readonly name: string;
  readonly lastModified: number;
  /** Bytes, as the listing states them. */
  readonly size: number;
}

/** A chunk or deletion mark of a chunked home, as the key names it. */
export interface ChunkedObject extends ListedObject {
  readonly storageId: string;
  readonly kind: "chunk" | "mark";
}

/**
 * The bucket as `ObjectAgentHomeStore` sees it: the key layout under
 * `<prefix>homes/` (README "Object layout"), the typed errors every bucket
 * call is wrapped in, and the small reads and writes (pointers,
 * manifests, listings, deletes) the checkpoint, restore, browse and
 * reconcile paths share.
 */
export class StoreBucket {
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
    readonly prefix: string,
  ) {}

  homesPrefix(): string {
    return `${this.prefix}homes/`;
  }

  objectKey(storageId: string, revision: number, name: string): string {
    return `${this.homesPrefix()}${storageId}/${revision}/${name}`;
  }

  chunkBucket(storageId: string): ChunkBucket {
    return new ChunkBucket(this.s3, this.bucket, `${this.homesPrefix()}${storageId}/`, (what, send) =>
      this.call(what, send),
    );
  }

  /** Runs one bucket call; anything but our own errors becomes UNAVAILABLE without the SDK's request details. */
  async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof AgentComputerError) throw error;
      throw this.unavailable(what, error);
    }
  }

  unavailable(what: string, error: unknown): AgentComputerError {
    const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
    if (e?.name === "AbortError")
      return new AgentComputerError("ABORTED", `The home store stopped ${what}: the operation was aborted.`);
    // Only the error's name and status: SDK errors can carry request details that do not belong in logs.
    const status = e?.$metadata?.httpStatusCode;
    return new AgentComputerError(
      "UNAVAILABLE",
      `The bucket "${this.bucket}" failed while ${what}: ${e?.code ?? e?.name ?? "unknown error"}${status ? ` (HTTP ${status})` : ""}. Check the endpoint, credentials and bucket, then retry.`,
      { details: { bucket: this.bucket, status } },
    );
  }

  async get(key: string, signal: AbortSignal): Promise<Readable> {
    const result = await this.call("downloading a checkpoint", () =>
      this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal }),
    );
    return result.Body as Readable;
  }

  async put(key: string, text: string): Promise<void> {
    await this.call("writing a revision pointer", () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: text })),
    );
  }

  async putBytes(key: string, body: Buffer, what: string, signal: AbortSignal): Promise<void> {
    await this.call(what, () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }), {
        abortSignal: signal,
      }),
    );
  }

  /** A manifest (or its first bytes), refused from its Content-Length when over MAX_MANIFEST_BYTES. */
  async getBytes(key: string, range?: string): Promise<Buffer> {
    return this.call("downloading a manifest", () =>
      readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key,
        range,
        maxBytes: MAX_MANIFEST_BYTES,
        tooLarge: manifestTooLarge,
      }),
    );
  }

  /**
   * A pointer's text, read only up to MAX_POINTER_BYTES (issue 45, finding 7); a bigger one is not one this
   * store wrote and reads as empty, which names no winner (committed-pointer.ts).
   */
  async readPointer(key: string): Promise<string | undefined> {
    const oversized = new AgentComputerError("CHECKPOINT_CORRUPT", "A committed pointer is over its size limit.");
    try {
      const bytes = await readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key,
        maxBytes: MAX_POINTER_BYTES,
        tooLarge: () => oversized,
      });
      return bytes.toString("utf8");
    } catch (error) {
      if (error === oversized) return "";
      if (isMissing(error)) return undefined;
      throw this.unavailable("reading a revision pointer", error);
    }
  }

  async listObjects(prefix: string): Promise<StoredObject[]> {
    return (await this.listAll(prefix)).revisions;
  }

  deleteKeys(keys: readonly string[]): Promise<void> {
    return deleteBucketKeys(this.s3, this.bucket, keys, (what, send) => this.call(what, send), "objects");
  }

  /** Multipart uploads left by a killed checkpoint hold storage until aborted; not every server can list them. */
  async abortAbandonedUploads(now: number, abandonAfterMs: number): Promise<void> {
    let listed: ListMultipartUploadsCommandOutput;
    try {
      listed = await this.s3.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.homesPrefix() }));
    } catch {
      // s3rver answers NotImplemented; a bucket lifecycle rule (AbortIncompleteMultipartUpload) covers real S3 too.
      return;
    }
    for (const upload of listed.Uploads ?? []) {
      if (now - (upload.Initiated?.getTime() ?? now) < abandonAfterMs) continue;
      await this.s3
        .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.Key, UploadId: upload.UploadId }))
        .catch(() => {});
    }
  }

  /** Revision objects (archives, manifests, pointers) and chunk objects (chunks, marks) under `prefix`. */
  async listAll(prefix: string): Promise<{ revisions: StoredObject[]; chunked: ChunkedObject[] }> {
    const revisions: StoredObject[] = [];
    const chunked: ChunkedObject[] = [];
    const homes = this.homesPrefix();
    let token: string | undefined;
    do {
      const page = await this.call("listing objects", () =>
        this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token })),
      );
      for (const item of page.Contents ?? []) {
        const key = item.Key as string;
        if (!key.startsWith(homes)) continue;
        const found = parseHomeKey(key, key.slice(homes.length), item.LastModified?.getTime() ?? 0, item.Size ?? 0);
        if (found === undefined) continue;
        if ("revision" in found) revisions.push(found);
        else chunked.push(found);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return { revisions, chunked };
  }
}

/** A key under `homes/` this store wrote, or undefined: keys this store did not write are not its to delete. */
function parseHomeKey(
  key: string,
  rest: string,
  lastModified: number,
  size: number,
): StoredObject | ChunkedObject | undefined {
  const revision = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\/([1-9][0-9]*)\/([0-9a-f]{24}|committed)$/.exec(rest);
  if (revision !== null)
    return {
      key,
      storageId: revision[1] as string,
      revision: Number(revision[2]),
      name: revision[3] as string,
      lastModified,
      size,
    };
  const chunk = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})\/(chunks|gc-marks)\/([0-9a-z-]{1,64})$/.exec(rest);
  if (chunk !== null)
    return {
      key,
      storageId: chunk[1] as string,
      kind: chunk[2] === "chunks" ? "chunk" : "mark",
      name: chunk[3] as string,
      lastModified,
    };
  return undefined;
}

export function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NoSuchKey" || e?.name === "NotFound" || e?.$metadata?.httpStatusCode === 404;
}
