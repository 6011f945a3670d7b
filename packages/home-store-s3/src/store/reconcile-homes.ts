import { randomBytes } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { collectChunks } from "../chunked/chunk-collection.js";
import { chunkKeysOf } from "../chunked/chunk-keys.js";
import { objectsOf } from "../chunked/home-manifest.js";
import { isManifest, openManifest } from "../chunked/sealed-manifest.js";
import { verifyPointer } from "../committed-pointer.js";
import type { HomeReconcileResult } from "../home-reconcile-result.js";
import type { HomeRecord } from "../home-record.js";
import { storageIdPattern } from "./home-keys.js";
import { type ChunkedObject, COMMITTED, type StoredObject } from "./store-bucket.js";
import type { StoreContext } from "./store-context.js";

type Removal = { key: string; reason: "unowned" | "superseded" | "abandoned" };

/**
 * Deletes what no live home needs: objects of storage ids no computer owns
 * (deleted computers), revisions below a home's committed one (left by a
 * crash between commit and clean-up), attempts that lost the committed
 * revision, and attempts above it older than `abandonAfterMs` (a crash
 * before commit). Never an object of a committed revision's winner. With
 * `dryRun`, only reports.
 */
export async function reconcileHomes(store: StoreContext, dryRun: boolean): Promise<HomeReconcileResult> {
  const { bucket } = store;
  // Records first, objects second: an object uploaded after this listing is younger than any grace period.
  const owners = new Map<string, HomeRecord>();
  for await (const record of store.keys.records.list()) {
    if (storageIdPattern.test(record.storageId)) owners.set(record.storageId, record);
  }
  // Taken before any manifest is listed: the chunk rule (chunk-collection.ts) depends on it.
  const startedAt = Date.now();
  const { revisions: objects, chunked } = await bucket.listAll(bucket.homesPrefix());
  const now = Date.now();
  const winners = await winnersOf(store, owners, objects);
  const removed: Removal[] = [];
  const kept: string[] = [];
  for (const o of objects) {
    const owner = owners.get(o.storageId);
    if (owner === undefined) removed.push({ key: o.key, reason: "unowned" });
    else if (o.revision < owner.revision) removed.push({ key: o.key, reason: "superseded" });
    else if (o.revision === owner.revision) {
      const winner = winners.get(o.storageId);
      // Without a pointer the winner is unknown: keep every candidate of the committed revision.
      if (winner !== undefined && o.name !== COMMITTED && o.name !== winner)
        removed.push({ key: o.key, reason: "superseded" });
      else kept.push(o.key);
    } else if (now - o.lastModified >= store.settings.abandonAfterMs) removed.push({ key: o.key, reason: "abandoned" });
    else kept.push(o.key);
  }
  const chunkRemoved = await collectUnreferencedChunks(store, owners, objects, chunked, removed, startedAt, dryRun);
  if (!dryRun) {
    await bucket.deleteKeys(removed.map((r) => r.key));
    await bucket.abortAbandonedUploads(now, store.settings.abandonAfterMs);
  }
  return { dryRun, examined: objects.length + chunked.length, removed: [...chunkRemoved, ...removed], kept };
}

/**
 * The winning attempt of each owned home's committed revision: the one its
 * computer record names, else the one its pointer names where that
 * authenticates.
 */
async function winnersOf(
  store: StoreContext,
  owners: ReadonlyMap<string, HomeRecord>,
  objects: readonly StoredObject[],
): Promise<Map<string, string>> {
  const winners = new Map<string, string>();
  const listed = new Set(objects.map((o) => o.key));
  for (const [storageId, owner] of owners) {
    const named = owner.committedAttempt;
    // The record names the winner: every other candidate of its revision is a loser, whatever a pointer says.
    if (named !== undefined && listed.has(store.bucket.objectKey(storageId, owner.revision, named)))
      winners.set(storageId, named);
  }
  for (const o of objects) {
    if (winners.has(o.storageId)) continue;
    const owner = owners.get(o.storageId);
    if (owner !== undefined && o.revision === owner.revision && o.name === COMMITTED) {
      const attempt = await signedWinner(store, owner, o);
      // A pointer naming no listed attempt (empty, torn, or written by hand) names no winner: deleting
      // every other candidate on its word would delete the committed revision itself. Nor does one that
      // does not authenticate (flipped to a loser, issue 45, finding 9): it would delete the winner.
      const named = attempt !== undefined && listed.has(store.bucket.objectKey(o.storageId, o.revision, attempt));
      if (named) winners.set(o.storageId, attempt);
    }
  }
  return winners;
}

/** The attempt a reconciled home's pointer names, only when it authenticates; any doubt names none. */
async function signedWinner(
  store: StoreContext,
  owner: HomeRecord,
  pointer: StoredObject,
): Promise<string | undefined> {
  // Reading a key must not make one (dataKeyOf does for a home without): no key, no signed pointer.
  if (owner.wrappedDataKey === undefined) return undefined;
  const text = await store.bucket.readPointer(pointer.key);
  if (text === undefined) return undefined;
  const dataKey = await store.keys.dataKeyOf(owner).catch((error: unknown) => {
    // A key that does not unwrap leaves the winner unknown: keep every candidate.
    if (AgentComputerError.is(error, "CHECKPOINT_CORRUPT")) return undefined;
    throw error;
  });
  if (dataKey === undefined) return undefined;
  const reading = verifyPointer(dataKey, owner.storageId, pointer.revision, text);
  return "attempt" in reading ? reading.attempt : undefined;
}

/**
 * The reconciler's chunk half: for each live home, chunks no listed
 * manifest (committed, or pending and kept) references are marked, and
 * deleted a grace period later (chunk-collection.ts); an unowned home's
 * chunks go at once, like its revisions. A manifest that does not open
 * stops collection for its home: better garbage than a missing chunk.
 */
async function collectUnreferencedChunks(
  store: StoreContext,
  owners: ReadonlyMap<string, HomeRecord>,
  objects: readonly StoredObject[],
  chunked: readonly ChunkedObject[],
  removed: readonly { key: string }[],
  startedAt: number,
  dryRun: boolean,
): Promise<{ key: string; reason: "unowned" | "unreferenced" }[]> {
  const out: { key: string; reason: "unowned" | "unreferenced" }[] = [];
  const unowned = chunked.filter((o) => !owners.has(o.storageId)).map((o) => o.key);
  out.push(...unowned.map((key) => ({ key, reason: "unowned" as const })));
  if (!dryRun) await store.bucket.deleteKeys(unowned);
  const removing = new Set(removed.map((r) => r.key));
  for (const [storageId, owner] of owners) {
    const mine = chunked.filter((o) => o.storageId === storageId);
    if (mine.length === 0) continue;
    const manifests = objects.filter(
      (o) => o.storageId === storageId && o.name !== COMMITTED && o.revision >= owner.revision && !removing.has(o.key),
    );
    const referenced = await referencedChunks(store, owner, manifests).catch(() => undefined);
    if (referenced === undefined) continue;
    const chunks = store.bucket.chunkBucket(storageId);
    const marks = await Promise.all(
      mine.filter((o) => o.kind === "mark").map(async (m) => ({ ...m, names: await chunks.readMark(m) })),
    );
    const plan = collectChunks({
      chunks: mine.filter((o) => o.kind === "chunk"),
      marks,
      referenced,
      now: startedAt,
      graceMs: store.settings.chunkGraceMs,
    });
    out.push(...plan.deleteChunks.map((key) => ({ key, reason: "unreferenced" as const })));
    if (dryRun) continue;
    await chunks.deleteKeys(plan.deleteChunks);
    await chunks.deleteKeys(plan.deleteMarks);
    if (plan.mark.length > 0) await chunks.writeMark(`${Date.now()}-${randomBytes(6).toString("hex")}`, plan.mark);
  }
  return out;
}

/** Every chunk object (chunk or pack) the given revision objects need (format-1 archives need none). */
async function referencedChunks(
  store: StoreContext,
  owner: HomeRecord,
  manifests: readonly StoredObject[],
): Promise<Set<string>> {
  const referenced = new Set<string>();
  if (manifests.length === 0) return referenced;
  const keys = chunkKeysOf(await store.keys.dataKeyOf(owner), owner.storageId);
  for (const object of manifests) {
    const head = await store.bucket.getBytes(object.key, "bytes=0-7");
    if (!isManifest(head)) continue;
    const sealed = await store.bucket.getBytes(object.key);
    const { manifest } = openManifest(keys, object.revision, sealed, store.settings.limits);
    for (const name of objectsOf(manifest)) referenced.add(name);
  }
  return referenced;
}
