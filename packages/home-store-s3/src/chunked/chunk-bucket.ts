import { AgentComputerError } from "@agent-computer/core";
import { ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { readCappedObject } from "../capped-object-read.js";
import { deleteBucketKeys } from "../delete-bucket-keys.js";
import type { ChunkKeys } from "./chunk-keys.js";
import type { ChunkLocation, PackRef } from "./home-manifest.js";
import { chunkNamePattern, corruptChunk, openChunk, SEALED_CHUNK_OVERHEAD } from "./sealed-chunk.js";

/**
 * The most bytes of a deletion mark read: the names of a million chunks (a
 * home at the default entry limit). A bigger one lists nothing, which can
 * only delay deletion (issue 45, finding 7: objects are read with a cap).
 */
const MAX_MARK_BYTES = 128 * 1024 * 1024;

/** One object under a home's `chunks/` or `gc-marks/`. */
export interface ListedObject {
  readonly key: string;
  readonly name: string;
  /** Server time, whole seconds on most servers. */
  readonly lastModified: number;
}

/** Runs one bucket call, turning SDK failures into typed errors (the store's `call`). */
export type BucketCall = <T>(what: string, send: () => Promise<T>) => Promise<T>;

/**
 * The chunk objects of one home, `homes/<storage-id>/chunks/<name>`, and the
 * reconciler's deletion marks beside them, `homes/<storage-id>/gc-marks/<id>`
 * (README "Format v2", "Garbage collection").
 */
export class ChunkBucket {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** `<prefix>homes/<storage-id>/`. */
    private readonly homePrefix: string,
    private readonly call: BucketCall,
  ) {}

  chunkKey(name: string): string {
    return `${this.homePrefix}chunks/${name}`;
  }

  async listChunks(): Promise<ListedObject[]> {
    return (await this.listUnder("chunks/")).filter((o) => chunkNamePattern.test(o.name));
  }

  async listMarks(): Promise<ListedObject[]> {
    return (await this.listUnder("gc-marks/")).filter((o) => /^[0-9a-z-]{1,64}$/.test(o.name));
  }

  /** The chunk names a deletion mark lists; an unreadable mark lists nothing (it can only delay deletion). */
  async readMark(mark: ListedObject): Promise<string[]> {
    try {
      const bytes = await readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key: mark.key,
        maxBytes: MAX_MARK_BYTES,
        tooLarge: () => new AgentComputerError("CHECKPOINT_CORRUPT", "A deletion mark is over its size limit."),
      });
      const names = JSON.parse(bytes.length === 0 ? "[]" : bytes.toString("utf8")) as unknown;
      return Array.isArray(names)
        ? names.filter((n): n is string => typeof n === "string" && chunkNamePattern.test(n))
        : [];
    } catch {
      return [];
    }
  }

  async writeMark(id: string, names: readonly string[]): Promise<void> {
    await this.call("writing a deletion mark", () =>
      this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: `${this.homePrefix}gc-marks/${id}`,
          Body: JSON.stringify(names),
        }),
      ),
    );
  }

  /** Writes one chunk or pack object. */
  async put(key: string, body: Buffer, signal: AbortSignal): Promise<void> {
    await this.call("uploading a chunk", () =>
      this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.length }), {
        abortSignal: signal,
      }),
    );
  }

  /**
   * A whole pack, exactly the bytes its manifest states: refused from its
   * Content-Length when longer, CHECKPOINT_CORRUPT when missing, shorter or longer.
   */
  async fetchPack(pack: PackRef, signal: AbortSignal): Promise<Buffer> {
    const body = await this.readChunkObject(pack.name, pack.bytes, undefined, signal);
    if (body.length !== pack.bytes)
      throw corruptChunk(pack.name, `the pack holds ${body.length} bytes, not the ${pack.bytes} its manifest names`);
    return body;
  }

  /**
   * Downloads and opens one chunk: its own object, or (with `location`) its
   * bytes alone out of a pack. A missing one is CHECKPOINT_CORRUPT (the manifest names it).
   */
  async fetch(
    keys: ChunkKeys,
    name: string,
    size: number,
    signal: AbortSignal,
    location: ChunkLocation = {},
  ): Promise<Buffer> {
    const sealedBytes = size + SEALED_CHUNK_OVERHEAD;
    if (location.pack === undefined)
      return openChunk(keys, name, size, await this.readChunkObject(name, sealedBytes, undefined, signal));
    const at = location.at as number;
    const range = `bytes=${at}-${at + sealedBytes - 1}`;
    return openChunk(keys, name, size, await this.readChunkObject(location.pack.name, sealedBytes, range, signal));
  }

  /** One object under `chunks/`, never more than `maxBytes` of it. */
  private async readChunkObject(
    name: string,
    maxBytes: number,
    range: string | undefined,
    signal: AbortSignal,
  ): Promise<Buffer> {
    try {
      // Never more than the sealed size its manifest implies: a swapped-in 600 MB object is refused from its
      // Content-Length, not downloaded first (issue 45, finding 7).
      return await readCappedObject({
        s3: this.s3,
        bucket: this.bucket,
        key: this.chunkKey(name),
        maxBytes,
        range,
        signal,
        tooLarge: (stated) =>
          new AgentComputerError(
            "CHECKPOINT_CORRUPT",
            `The checkpoint cannot be restored: chunk ${name.slice(0, 12)}… is ${stated ?? "over"} bytes, more than the ${maxBytes} its manifest names with their seal. Nothing was restored from it.`,
            { details: { chunk: name } },
          ),
      });
    } catch (error) {
      if (error instanceof AgentComputerError) throw error;
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      // A pack shorter than the range its manifest names answers 416: as damaged as a missing object.
      const status = e?.$metadata?.httpStatusCode;
      if (e?.name === "NoSuchKey" || e?.name === "InvalidRange" || status === 404 || status === 416)
        throw new AgentComputerError(
          "CHECKPOINT_CORRUPT",
          `The checkpoint cannot be restored: chunk ${name.slice(0, 12)}… its manifest names is missing from the bucket. Nothing was restored from it.`,
          { details: { chunk: name } },
        );
      return this.call("downloading a chunk", () => Promise.reject(error));
    }
  }

  deleteKeys(keys: readonly string[]): Promise<void> {
    return deleteBucketKeys(this.s3, this.bucket, keys, this.call, "chunks");
  }

  private async listUnder(folder: string): Promise<ListedObject[]> {
    const prefix = `${this.homePrefix}${folder}`;
    const found: ListedObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.call("listing chunks", () =>
        this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token })),
      );
      for (const item of page.Contents ?? []) {
        const key = item.Key as string;
        found.push({ key, name: key.slice(prefix.length), lastModified: item.LastModified?.getTime() ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return found;
  }
}
