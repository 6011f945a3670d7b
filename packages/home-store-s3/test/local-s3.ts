import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, ListObjectsV2Command, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll } from "vitest";
import { type MemoryHomeRecords, ObjectAgentHomeStore, type ObjectAgentHomeStoreOptions } from "../src/index.js";

/** A real S3-compatible HTTP server (s3rver) on 127.0.0.1, with one bucket, for the tests of this package. */
export interface LocalS3 {
  readonly port: number;
  readonly bucket: string;
  readonly config: S3ClientConfig;
  readonly client: S3Client;
  /** Every key in the bucket under `prefix`. */
  keys(prefix?: string): Promise<string[]>;
  close(): Promise<void>;
}

export function s3ConfigFor(port: number): S3ClientConfig {
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  };
}

export async function startLocalS3(bucket = "agent-homes"): Promise<LocalS3> {
  const directory = mkdtempSync(join(tmpdir(), "home-store-s3-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory });
  const { port } = (await server.run()) as { port: number };
  const config = s3ConfigFor(port);
  const client = new S3Client(config);
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    port,
    bucket,
    config,
    client,
    async keys(prefix = "") {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
        );
        out.push(...(page.Contents ?? []).map((c) => c.Key as string));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort();
    },
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * A suite's S3 server and scratch folder, started before its tests and
 * removed after them; `fresh(name)` names a new folder in the scratch one.
 */
export function useLocalS3(bucket: string, folder: string): { readonly s3: LocalS3; fresh(name: string): string } {
  let s3: LocalS3 | undefined;
  let base = "";
  let dirs = 0;
  beforeAll(async () => {
    s3 = await startLocalS3(bucket);
    base = mkdtempSync(join(tmpdir(), `${folder}-`));
  });
  afterAll(async () => {
    await s3?.close();
    if (base !== "") await rm(base, { recursive: true, force: true });
  });
  return {
    get s3() {
      if (s3 === undefined) throw new Error("the suite's S3 server starts before its tests");
      return s3;
    },
    fresh: (name) => join(base, `${name}-${++dirs}`),
  };
}

/** Stores on the suite's server, each with a fresh data folder, `defaults` under each call's options. */
export function storesOn(
  suite: ReturnType<typeof useLocalS3>,
  defaults: Partial<ObjectAgentHomeStoreOptions> & Pick<ObjectAgentHomeStoreOptions, "keyring">,
): (records: MemoryHomeRecords, options?: Partial<ObjectAgentHomeStoreOptions>) => ObjectAgentHomeStore {
  return (records, options = {}) =>
    new ObjectAgentHomeStore({
      s3: suite.s3.config,
      bucket: suite.s3.bucket,
      dataDir: suite.fresh("data"),
      records,
      ...defaults,
      ...options,
    });
}
