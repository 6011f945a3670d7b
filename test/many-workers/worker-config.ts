import type { S3ClientConfig } from "@aws-sdk/client-s3";

/** What the parent tells one worker process of the many-workers test. */
export interface WorkerConfig {
  readonly name: string;
  readonly deployment: string;
  readonly postgresUrl: string;
  readonly s3: S3ClientConfig;
  readonly bucket: string;
  /** The shared host folder Docker mounts homes from (one Docker host). */
  readonly dataDir: string;
  /** The space's content key, base64. */
  readonly contentKey: string;
  /** The workspace whose Team computer every bot of the test shares. */
  readonly workspaceId: string;
  readonly computerId: string;
  readonly leaseTtlMs: number;
  readonly idleMs: number;
}
