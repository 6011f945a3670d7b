import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import {
  AgentComputerError,
  checkOpContext,
  normalizeHomePath,
  type OpContext,
  parseInput,
  signalOf,
  throwIfDone,
} from "@agent-computer/core";
import PQueue from "p-queue";
import { z } from "zod";
import { packHome } from "../codec/pack-home.js";
import { recoverInterruptedRestore, restoreHome, stageHome, swapStagedDir } from "../codec/restore-home.js";
import { type RestoreLimits, restoreLimitsSchema } from "../codec/restore-limits.js";
import type { AgentHomeStore } from "./agent-home-store.js";
import type { HomeCheckpoint } from "./home-checkpoint.js";
import type { HomeCheckpointRequest } from "./home-checkpoint-request.js";
import {
  homeCheckpointRequestSchema as checkpointRequestSchema,
  homeKeySchema,
  homeRestoreRequestSchema as restoreRequestSchema,
} from "./home-request-schemas.js";
import type { HomeRestoreRequest } from "./home-restore-request.js";
import type { HomeSource } from "./home-source.js";
import type { HomeTarget } from "./home-target.js";
import type { LocalAgentHomeStoreOptions } from "./local-agent-home-store-options.js";
import type { StoredHomeEntry, StoredHomeFile, StoredHomeRange } from "./stored-home-entry.js";
import { StoredHomeFolder } from "./stored-home-folder.js";

const rangeSchema = z
  .object({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() })
  .strict()
  .refine((r) => r.end >= r.start, { message: "end must not be before start", path: ["end"] });
const optionsSchema = z.object({ dataDir: z.string().min(1), limits: restoreLimitsSchema.optional() }).strict();

/** The marker file: the latest checkpoint, or a tombstone that keeps the revision after a delete. */
type RevisionMarker = HomeCheckpoint & { readonly deletedAt?: number };

/**
 * The journal of a checkpoint between its commit hook and its swap: the
 * checkpoint it becomes and its complete copy, parked beside the home
 * (none for a mounted home). A crash in that window leaves this file, and
 * the caller's committed revision later says whether to finish or drop it.
 */
interface PendingCommit {
  readonly checkpoint: HomeCheckpoint;
  /** The parked copy's folder name, a sibling of the home's folder. */
  readonly parked: string | null;
}

/**
 * The home store of one host: the latest copy of each home in
 * `DATA_DIR/homes/<home-key>` (a plain folder, ready to mount), its metadata
 * in `DATA_DIR/home-revisions/<home-key>.json`. A checkpoint is staged beside
 * the current copy, committed through the caller's hook, then swapped in
 * whole; checkpoints of one home run one at a time. A crash between the
 * hook and the swap is settled by the next call that passes
 * `committedRevision`. For a mounted-home
 * provider the live home is the folder itself and a checkpoint only
 * advances the revision marker.
 */
export class LocalAgentHomeStore implements AgentHomeStore {
  /** Absolute DATA_DIR. */
  readonly dataDir: string;
  private readonly limits: RestoreLimits;
  private readonly queues = new Map<string, PQueue>();

  constructor(options: LocalAgentHomeStoreOptions) {
    const parsed = parseInput(optionsSchema, options, "LocalAgentHomeStoreOptions");
    this.dataDir = resolve(parsed.dataDir);
    this.limits = parsed.limits ?? {};
  }

  /** The folder that holds a home's latest copy (what a mounted-home provider mounts). */
  homeDir(homeKey: string): string {
    return join(this.dataDir, "homes", parseInput(homeKeySchema, homeKey, "home key"));
  }

  checkpoint(request: HomeCheckpointRequest): Promise<HomeCheckpoint> {
    const parsed = parseInput(checkpointRequestSchema, request, "HomeCheckpointRequest");
    const ctx = checkOpContext(parsed.ctx);
    return this.serially(parsed.homeKey, () =>
      this.takeCheckpoint(parsed.homeKey, parsed.source as HomeSource, parsed.commit, parsed.committedRevision, ctx),
    );
  }

  restore(request: HomeRestoreRequest): Promise<HomeCheckpoint | undefined> {
    const parsed = parseInput(restoreRequestSchema, request, "HomeRestoreRequest");
    const ctx = checkOpContext(parsed.ctx);
    return this.serially(parsed.homeKey, async () => {
      await this.settlePending(parsed.homeKey, parsed.committedRevision);
      return this.restoreLatest(parsed.homeKey, parsed.target as HomeTarget, ctx);
    });
  }

  async latest(homeKey: string): Promise<HomeCheckpoint | undefined> {
    const marker = await this.readMarker(parseInput(homeKeySchema, homeKey, "home key"));
    if (marker === undefined || marker.deletedAt !== undefined) return undefined;
    return marker;
  }

  /**
   * Lists a folder of the latest copy in place (no restore), through
   * `StoredHomeFolder`: a mounted home is the live folder a bot writes, so
   * no link in it is followed.
   */
  async list(homeKey: string, dir: string): Promise<StoredHomeEntry[]> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    await this.latestOrMissing(key);
    return new StoredHomeFolder(this.homeDir(key)).list(dir);
  }

  /** Reads a file (or `range` of it) of the latest copy in place; memory is the range read. */
  async read(homeKey: string, path: string, options: { range?: StoredHomeRange } = {}): Promise<StoredHomeFile> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    const range = options.range === undefined ? undefined : parseInput(rangeSchema, options.range, "StoredHomeRange");
    const { revision } = await this.latestOrMissing(key);
    const { size, bytes } = await new StoredHomeFolder(this.homeDir(key)).read(path, range);
    return { path: normalizeHomePath(path), size, revision, bytes };
  }

  delete(homeKey: string): Promise<void> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    return this.serially(key, async () => {
      await this.dropPending(key);
      const marker = await this.readMarker(key);
      await rm(this.homeDir(key), { recursive: true, force: true });
      await recoverInterruptedRestore(this.homeDir(key));
      if (marker !== undefined && marker.deletedAt === undefined) {
        await this.writeMarker({ ...marker, deletedAt: Date.now() });
      }
    });
  }

  private async latestOrMissing(homeKey: string): Promise<HomeCheckpoint> {
    const latest = await this.latest(homeKey);
    if (latest === undefined)
      throw new AgentComputerError(
        "NOT_FOUND",
        `Home "${homeKey}" has no checkpoint yet: nothing is stored to browse.`,
      );
    return latest;
  }

  private async takeCheckpoint(
    homeKey: string,
    source: HomeSource,
    commit: ((next: number) => Promise<void>) | undefined,
    committedRevision: number | undefined,
    ctx: OpContext,
  ): Promise<HomeCheckpoint> {
    throwIfDone(ctx, "checkpoint");
    const home = this.homeDir(homeKey);
    // Still undecided (no committed revision given): this newer copy supersedes it.
    const undecided = await this.settlePending(homeKey, committedRevision);
    if (undecided) await this.dropPending(homeKey, undecided);
    await recoverInterruptedRestore(home);
    const stored = (await this.readMarker(homeKey))?.revision ?? 0;
    // Revisions only grow: past the marker, an undecided commit and the caller's record alike.
    const next = Math.max(stored, undecided?.checkpoint.revision ?? 0, committedRevision ?? 0) + 1;
    if ("mounted" in source) {
      // The live home is this folder: nothing to copy, only the marker moves.
      await mkdir(home, { recursive: true });
      const checkpoint = summary(homeKey, next, null);
      await this.commitThrough(commit, { checkpoint, parked: null }, ctx);
      return checkpoint;
    }
    const signal = signalOf(ctx, "checkpoint");
    let resume: (() => Promise<void>) | undefined;
    let tar: AsyncIterable<Uint8Array> & { destroy(error?: Error): void };
    if ("machine" in source) {
      // Browsers rewrite their profiles while they run; pause them for a consistent export.
      resume = await source.machine.quiesceDesktops?.(ctx);
      try {
        tar = await source.machine.files.exportWorkspace(ctx);
      } catch (error) {
        await resume?.();
        throw error;
      }
    } else {
      if (resolve(source.dir) === home)
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `The source folder is the store's own copy of "${homeKey}"; use { mounted: true } for a mounted home.`,
        );
      tar = packHome(source.dir).tar;
    }
    const hash = createHash("sha256");
    const onAbort = () => tar.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    let staged: Awaited<ReturnType<typeof stageHome>>;
    try {
      // The copy is this store's alone (a mounted home never gets here): unchanged files are linked from it.
      staged = await stageHome(digesting(tar, hash), home, this.limits, { linkUnchanged: true });
    } finally {
      signal.removeEventListener("abort", onAbort);
      await resume?.();
    }
    // Parked under a name crash recovery of restores leaves alone, until the commit is settled.
    const parked = `.${homeKey}.pending-${next}`;
    await rm(join(dirname(home), parked), { recursive: true, force: true });
    await rename(staged.detach(), join(dirname(home), parked));
    const checkpoint = summary(homeKey, next, { ...staged.stats, digest: `sha256:${hash.digest("hex")}` });
    await this.commitThrough(commit, { checkpoint, parked }, ctx);
    return checkpoint;
  }

  /**
   * Journals the checkpoint, calls the commit hook, then makes it the latest.
   * A refusal drops it and leaves the previous copy; a crash leaves the
   * journal for `settlePending`.
   */
  private async commitThrough(
    commit: ((next: number) => Promise<void>) | undefined,
    pending: PendingCommit,
    ctx: OpContext,
  ): Promise<void> {
    const { homeKey, revision } = pending.checkpoint;
    await this.writeJson(this.pendingPath(homeKey), pending);
    try {
      throwIfDone(ctx, "checkpoint");
      await commit?.(revision);
    } catch (error) {
      // The fence (or the caller) said no: the previous copy stays the latest.
      await this.dropPending(homeKey, pending);
      throw error;
    }
    await this.finishPending(pending);
  }

  /**
   * Settles a checkpoint a crash left between its commit hook and its swap:
   * finished when the caller's record has its revision, dropped when the
   * record is behind it. Left alone, and returned, when the caller gave no revision.
   */
  private async settlePending(
    homeKey: string,
    committedRevision: number | undefined,
  ): Promise<PendingCommit | undefined> {
    const pending = await this.readPending(homeKey);
    if (pending === undefined) return undefined;
    const stored = (await this.readMarker(homeKey))?.revision ?? 0;
    const { revision } = pending.checkpoint;
    // At or below the marker: a later checkpoint already went past it.
    if (revision <= stored) await this.dropPending(homeKey, pending);
    else if (committedRevision === undefined) return pending;
    else if (committedRevision >= revision) await this.finishPending(pending);
    else await this.dropPending(homeKey, pending);
    return undefined;
  }

  /** Swaps the parked copy in (unless a crash after the swap already did), then moves the marker. */
  private async finishPending(pending: PendingCommit): Promise<void> {
    const home = this.homeDir(pending.checkpoint.homeKey);
    if (pending.parked !== null) {
      const parked = join(dirname(home), basename(pending.parked));
      if (await exists(parked)) await swapStagedDir(parked, home);
    }
    await this.writeMarker(pending.checkpoint);
    await rm(this.pendingPath(pending.checkpoint.homeKey), { force: true });
  }

  /** Removes the journal and its parked copy; `pending` when the caller already read it. */
  private async dropPending(homeKey: string, known?: PendingCommit): Promise<void> {
    const pending = known ?? (await this.readPending(homeKey));
    if (pending === undefined) return;
    if (pending.parked !== null)
      await rm(join(dirname(this.homeDir(homeKey)), basename(pending.parked)), { recursive: true, force: true });
    await rm(this.pendingPath(homeKey), { force: true });
  }

  private async restoreLatest(
    homeKey: string,
    target: HomeTarget,
    ctx: OpContext,
  ): Promise<HomeCheckpoint | undefined> {
    throwIfDone(ctx, "restore");
    const latest = await this.latest(homeKey);
    if (latest === undefined) return undefined;
    const home = this.homeDir(homeKey);
    await recoverInterruptedRestore(home);
    // A mounted home already is this folder.
    if ("mounted" in target) return latest;
    if ("dir" in target) {
      if (resolve(target.dir) === home)
        throw new AgentComputerError("INVALID_ARGUMENT", "The target folder is the store's own copy of the home.");
      await restoreHome(packHome(home).tar, target.dir, this.limits);
    } else await target.machine.files.importWorkspace(packHome(home).tar, ctx);
    return latest;
  }

  private serially<T>(homeKey: string, work: () => Promise<T>): Promise<T> {
    let queue = this.queues.get(homeKey);
    if (queue === undefined) {
      queue = new PQueue({ concurrency: 1 });
      this.queues.set(homeKey, queue);
    }
    return queue.add(work) as Promise<T>;
  }

  private markerPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.json`);
  }

  private pendingPath(homeKey: string): string {
    return join(this.dataDir, "home-revisions", `${homeKey}.pending.json`);
  }

  private readMarker(homeKey: string): Promise<RevisionMarker | undefined> {
    return this.readJson<RevisionMarker>(this.markerPath(homeKey), "revision marker");
  }

  private readPending(homeKey: string): Promise<PendingCommit | undefined> {
    return this.readJson<PendingCommit>(this.pendingPath(homeKey), "pending-commit journal");
  }

  private writeMarker(marker: RevisionMarker): Promise<void> {
    return this.writeJson(this.markerPath(marker.homeKey), marker);
  }

  private async readJson<T>(path: string, what: string): Promise<T | undefined> {
    const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new AgentComputerError(
        "CHECKPOINT_CORRUPT",
        `The ${what} ${path} is not valid JSON; restore it from a backup or remove it.`,
        { cause: error },
      );
    }
  }

  /** Written to a temporary file and renamed, so a crash leaves the old or the new file, never half of one. */
  private async writeJson(path: string, value: unknown): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(value)}\n`);
    await rename(temporary, path);
  }
}

async function* digesting(
  source: AsyncIterable<Uint8Array>,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    hash.update(chunk);
    yield chunk;
  }
}

function summary(
  homeKey: string,
  revision: number,
  copied: { bytes: number; files: number; digest: string } | null,
): HomeCheckpoint {
  return {
    homeKey,
    revision,
    createdAt: Date.now(),
    bytes: copied?.bytes ?? null,
    files: copied?.files ?? null,
    digest: copied?.digest ?? null,
    mounted: copied === null,
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
