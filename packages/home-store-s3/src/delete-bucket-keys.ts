import { AgentComputerError } from "@agent-computer/core";
import { DeleteObjectsCommand, type S3Client } from "@aws-sdk/client-s3";
import type { BucketCall } from "./chunked/chunk-bucket.js";

/** S3's DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

/**
 * Deletes `keys` from the bucket in batches through `call` (the store's
 * typed errors and retries); an object the bucket refused to delete is
 * `UNAVAILABLE`, for the reconciler to try again. `what` names the objects
 * in messages ("objects", "chunks").
 */
export async function deleteBucketKeys(
  s3: S3Client,
  bucket: string,
  keys: readonly string[],
  call: BucketCall,
  what: string,
): Promise<void> {
  for (let i = 0; i < keys.length; i += DELETE_BATCH) {
    const batch = keys.slice(i, i + DELETE_BATCH);
    const result = await call(`deleting ${what}`, () =>
      s3.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
      ),
    );
    if (result.Errors?.length)
      throw new AgentComputerError(
        "UNAVAILABLE",
        `The bucket "${bucket}" refused to delete ${result.Errors.length} of the ${what} (${result.Errors[0]?.Code}); run the reconciler again later.`,
      );
  }
}
