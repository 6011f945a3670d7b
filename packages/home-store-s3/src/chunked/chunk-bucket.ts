import { AgentComputerError } from "@agent-computer/core";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import PQueue from "p-queue";
import { deleteBucketKeys } from "../delete-bucket-keys.js";
import type { ChunkKeys } from "./chunk-keys.js";
import { type ChunkPlace, readPlace } from "./home-snapshot.js";
import { chunkNamePattern, openChunk, sealChunk } from "./sealed-chunk.js";

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
      const result = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: mark.key }));
      const names = JSON.parse((await result.Body?.transformToString()) ?? "[]") as unknown;
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

  /**
   * Seals and uploads each named chunk, read again from `root` where the
   * snapshot found it, `concurrency` at a time: memory stays near
   * `concurrency` chunks. Returns the sealed bytes sent.
   */
  async upload(
    keys: ChunkKeys,
    root: string,
    chunks: ReadonlyMap<string, ChunkPlace>,
    concurrency: number,
    signal: AbortSignal,
  ): Promise<number> {
    const queue = new PQueue({ concurrency });
    let bytes = 0;
    const sends = [...chunks].map(([name, place]) =>
      queue.add(async () => {
        signal.throwIfAborted();
        const plain = readPlace(root, place);
        if (plain === undefined)
          throw new AgentComputerError(
            "CONFLICT",
            "A staged file changed while its chunks were uploaded; checkpoint again.",
          );
        const body = sealChunk(keys, name, plain);
        await this.call("uploading a chunk", () =>
          this.s3.send(
            new PutObjectCommand({
              Bucket: this.bucket,
              Key: this.chunkKey(name),
              Body: body,
              ContentLength: body.length,
            }),
            { abortSignal: signal },
          ),
        );
        bytes += body.length;
      }),
    );
    try {
      await Promise.all(sends);
    } catch (error) {
      queue.clear();
      await Promise.allSettled(sends);
      throw error;
    }
    return bytes;
  }

  /** Downloads and opens one chunk; a missing one is CHECKPOINT_CORRUPT (the manifest names it). */
  async fetch(keys: ChunkKeys, name: string, size: number, signal: AbortSignal): Promise<Buffer> {
    let body: Buffer;
    try {
      const result = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.chunkKey(name) }), {
        abortSignal: signal,
      });
      body = Buffer.from((await result.Body?.transformToByteArray()) ?? []);
    } catch (error) {
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404)
        throw new AgentComputerError(
          "CHECKPOINT_CORRUPT",
          `The checkpoint cannot be restored: chunk ${name.slice(0, 12)}… its manifest names is missing from the bucket. Nothing was restored from it.`,
          { details: { chunk: name } },
        );
      return this.call("downloading a chunk", () => Promise.reject(error));
    }
    return openChunk(keys, name, size, body);
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
