import type { Readable } from "node:stream";
import {
  homeKeySchema,
  listArchivedFolder,
  openCheckpoint,
  readArchivedFile,
  type StoredHomeEntry,
  type StoredHomeFile,
  type StoredHomeRange,
} from "@agent-computer/checkpoint";
import { AgentComputerError, parseInput } from "@agent-computer/core";
import { type ChunkKeys, chunkKeysOf } from "../chunked/chunk-keys.js";
import { type HomeManifest, locationOf } from "../chunked/home-manifest.js";
import { listManifest, planRead } from "../chunked/manifest-browser.js";
import { isManifest, openManifest } from "../chunked/sealed-manifest.js";
import { currentObject } from "./committed-revision.js";
import { checkedStorageId } from "./home-keys.js";
import type { StoreContext } from "./store-context.js";

/** A format-1 revision to browse by a streamed scan of its sealed archive. */
interface ArchiveToScan {
  readonly objectKey: string;
  readonly dataKey: Uint8Array;
  readonly storageId: string;
  readonly revision: number;
}

type Browsed = { manifest: HomeManifest; keys: ChunkKeys } | { archive: ArchiveToScan };

/** How many opened manifests a store keeps in memory for browsing. */
const REMEMBERED_MANIFESTS = 16;

/**
 * `list` and `read` of the committed revision without restoring it
 * (README "Browsing"): a chunked revision from its manifest (one download,
 * then kept in memory for that revision) and only the chunks a read needs,
 * a format-1 one by a streamed scan of its archive.
 */
export class StoredHomeBrowser {
  private readonly remembered = new Map<string, { manifest: HomeManifest; keys: ChunkKeys }>();

  constructor(private readonly store: StoreContext) {}

  async list(homeKey: string, dir: string): Promise<StoredHomeEntry[]> {
    const browsed = await this.browsed(homeKey);
    if ("archive" in browsed) return listArchivedFolder(await this.openArchive(browsed.archive), dir);
    return listManifest(browsed.manifest, dir);
  }

  async read(homeKey: string, path: string, range: StoredHomeRange | undefined): Promise<StoredHomeFile> {
    const browsed = await this.browsed(homeKey);
    if ("archive" in browsed) {
      const file = await readArchivedFile(await this.openArchive(browsed.archive), path, range);
      return { path: file.path, size: file.size, revision: browsed.archive.revision, bytes: file.bytes };
    }
    const { manifest, keys } = browsed;
    const plan = planRead(manifest, path, range);
    const bucket = this.store.bucket.chunkBucket(keys.storageId);
    const signal = new AbortController().signal;
    const pieces = await Promise.all(
      plan.chunks.map(async (chunk) => {
        const plain = await bucket.fetch(keys, chunk.name, chunk.size, signal, locationOf(manifest, chunk));
        return plain.subarray(Math.max(plan.start - chunk.offset, 0), Math.min(plan.end - chunk.offset, chunk.size));
      }),
    );
    return { path: plan.entry.path, size: plan.entry.size, revision: manifest.revision, bytes: Buffer.concat(pieces) };
  }

  /** Drops what this browser remembers of a home's manifests (after a delete). */
  forget(storageId: string): void {
    this.remembered.delete(storageId);
  }

  /** The committed revision's checked manifest; a small per-store memory of the last ones opened. */
  private async browsed(homeKey: string): Promise<Browsed> {
    const { bucket, keys: homeKeys, settings } = this.store;
    const record = await homeKeys.recordOf(parseInput(homeKeySchema, homeKey, "home key"));
    if (record.revision === 0) throw new AgentComputerError("NOT_FOUND", `Home "${homeKey}" has no checkpoint yet.`);
    const storageId = checkedStorageId(record);
    const remembered = this.remembered.get(storageId);
    if (remembered?.manifest.revision === record.revision) return remembered;
    const dataKey = await homeKeys.dataKeyOf(record);
    const object = await currentObject(bucket, storageId, record.revision, dataKey, record.committedAttempt);
    if (object === undefined) throw new AgentComputerError("NOT_FOUND", `Home "${homeKey}" has no checkpoint yet.`);
    if (!isManifest(await bucket.getBytes(object.key, "bytes=0-7")))
      return { archive: { objectKey: object.key, dataKey, storageId, revision: record.revision } };
    const keys = chunkKeysOf(dataKey, storageId);
    const { manifest } = openManifest(keys, record.revision, await bucket.getBytes(object.key), settings.limits);
    if (this.remembered.size >= REMEMBERED_MANIFESTS)
      this.remembered.delete(this.remembered.keys().next().value as string);
    this.remembered.set(storageId, { manifest, keys });
    return { manifest, keys };
  }

  /** A format-1 revision's archive, opened (each segment authenticated before it is handed on). */
  private async openArchive(archive: ArchiveToScan): Promise<Readable> {
    const body = await this.store.bucket.get(archive.objectKey, new AbortController().signal);
    return openCheckpoint(body, { dataKey: archive.dataKey, storageId: archive.storageId, revision: archive.revision });
  }
}
