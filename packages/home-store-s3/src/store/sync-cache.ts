import { createHash } from "node:crypto";
import { openCheckpoint, recoverInterruptedRestore, restoreHome } from "@agent-computer/checkpoint";
import { AgentComputerError, type OpContext } from "@agent-computer/core";
import { isManifest, MAX_MANIFEST_BYTES } from "../chunked/sealed-manifest.js";
import { manifestTooLarge } from "../stored-revision-errors.js";
import { restoreChunked } from "./chunked-restore.js";
import { currentObject } from "./committed-revision.js";
import type { CacheMarker } from "./home-cache.js";
import { checkedStorageId } from "./home-keys.js";
import { operationSignal } from "./operation-signal.js";
import type { StoreContext } from "./store-context.js";

/**
 * Makes `DATA_DIR/homes/<home-key>` the committed revision: a no-op when
 * the marker already says so, else a download, opened and checked into a
 * staging folder and swapped in whole (the previous cache stays on any
 * failure). The object's first bytes say its format: a sealed manifest
 * (chunked-restore.ts) or a format-1 archive. Undefined when the home has
 * no checkpoint (or it was deleted).
 */
export async function syncCache(
  store: StoreContext,
  homeKey: string,
  ctx: OpContext,
): Promise<CacheMarker | undefined> {
  const { bucket, cache, keys } = store;
  const record = await keys.recordOf(homeKey);
  if (record.revision === 0) return undefined;
  const storageId = checkedStorageId(record);
  const home = cache.homeDir(homeKey);
  await recoverInterruptedRestore(home);
  const marker = await cache.readMarker(homeKey);
  if (marker?.storageId === storageId && marker.revision === record.revision) return marker;
  const dataKey = await keys.dataKeyOf(record);
  const object = await currentObject(bucket, storageId, record.revision, dataKey, record.committedAttempt);
  if (object === undefined) return undefined;
  await store.emit({ stage: "downloading", homeKey, revision: record.revision, objectKey: object.key });
  const signal = operationSignal(ctx, "restore", store.settings);
  const body = await bucket.get(object.key, signal);
  const { head, stream } = await peekStart(body, 8);
  const revision = { homeKey, storageId, revision: record.revision, dataKey, createdAt: object.lastModified };
  if (isManifest(head)) {
    // By the listed size, before the body is read (issue 45, finding 7).
    if (object.size > MAX_MANIFEST_BYTES) {
      body.destroy();
      throw manifestTooLarge(object.size);
    }
    const sealed = await collectBytes(stream, MAX_MANIFEST_BYTES);
    return restoreChunked(store, revision, sealed, signal);
  }
  // Format 1: one sealed archive, opened segment by segment into the codec's checked restore.
  const hash = createHash("sha256");
  const stats = await restoreHome(
    tap(openCheckpoint(stream, { dataKey, storageId, revision: record.revision }), hash),
    home,
    store.settings.limits,
  );
  const synced: CacheMarker = {
    homeKey,
    storageId,
    revision: record.revision,
    createdAt: object.lastModified,
    bytes: stats.bytes,
    files: stats.files,
    digest: `sha256:${hash.digest("hex")}`,
    mounted: false,
  };
  await cache.writeMarker(synced);
  return synced;
}

/** Hashes what passes through. */
async function* tap(
  source: AsyncIterable<Uint8Array>,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    hash.update(chunk);
    yield chunk;
  }
}

/** Reads at least `bytes` of a stream (if it has them) and gives them back with a stream that replays them first. */
async function peekStart(
  body: AsyncIterable<Uint8Array>,
  bytes: number,
): Promise<{ head: Buffer; stream: AsyncIterable<Uint8Array> }> {
  const iterator = body[Symbol.asyncIterator]();
  const read: Uint8Array[] = [];
  let length = 0;
  let done = false;
  while (length < bytes) {
    const step = await iterator.next();
    if (step.done) {
      done = true;
      break;
    }
    read.push(step.value);
    length += step.value.byteLength;
  }
  async function* replay(): AsyncGenerator<Uint8Array> {
    yield* read;
    if (done) return;
    for (;;) {
      const step = await iterator.next();
      if (step.done) return;
      yield step.value;
    }
  }
  return { head: Buffer.concat(read), stream: replay() };
}

async function collectBytes(stream: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const part of stream) {
    length += part.byteLength;
    if (length > limit)
      throw new AgentComputerError(
        "CHECKPOINT_CORRUPT",
        `The checkpoint's manifest is over ${limit} bytes; nothing was restored from it.`,
      );
    parts.push(part);
  }
  return Buffer.concat(parts);
}
