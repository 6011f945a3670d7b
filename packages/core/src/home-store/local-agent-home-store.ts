import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import PQueue from "p-queue";
import { z } from "zod";
import { packHome } from "../checkpoint/pack-home.js";
import { recoverInterruptedRestore, restoreHome, stageHome } from "../checkpoint/restore-home.js";
import { type RestoreLimits, restoreLimitsSchema } from "../checkpoint/restore-limits.js";
import { checkOpContext, type OpContext, signalOf, throwIfDone } from "../contract/op-context.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { parseInput } from "../validation/parse-input.js";
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

const optionsSchema = z.object({ dataDir: z.string().min(1), limits: restoreLimitsSchema.optional() }).strict();

/** The marker file: the latest checkpoint, or a tombstone that keeps the revision after a delete. */
type RevisionMarker = HomeCheckpoint & { readonly deletedAt?: number };

/**
 * The home store of one host: the latest copy of each home in
 * `DATA_DIR/homes/<home-key>` (a plain folder, ready to mount), its metadata
 * in `DATA_DIR/home-revisions/<home-key>.json`. A checkpoint is staged beside
 * the current copy, committed through the caller's hook, then swapped in
 * whole; checkpoints of one home run one at a time. For a mounted-home
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
      this.takeCheckpoint(parsed.homeKey, parsed.source as HomeSource, parsed.commit, ctx),
    );
  }

  restore(request: HomeRestoreRequest): Promise<HomeCheckpoint | undefined> {
    const parsed = parseInput(restoreRequestSchema, request, "HomeRestoreRequest");
    const ctx = checkOpContext(parsed.ctx);
    return this.serially(parsed.homeKey, () => this.restoreLatest(parsed.homeKey, parsed.target as HomeTarget, ctx));
  }

  async latest(homeKey: string): Promise<HomeCheckpoint | undefined> {
    const marker = await this.readMarker(parseInput(homeKeySchema, homeKey, "home key"));
    if (marker === undefined || marker.deletedAt !== undefined) return undefined;
    return marker;
  }

  delete(homeKey: string): Promise<void> {
    const key = parseInput(homeKeySchema, homeKey, "home key");
    return this.serially(key, async () => {
      const marker = await this.readMarker(key);
      await rm(this.homeDir(key), { recursive: true, force: true });
      await recoverInterruptedRestore(this.homeDir(key));
      if (marker !== undefined && marker.deletedAt === undefined) {
        await this.writeMarker({ ...marker, deletedAt: Date.now() });
      }
    });
  }

  private async takeCheckpoint(
    homeKey: string,
    source: HomeSource,
    commit: ((next: number) => Promise<void>) | undefined,
    ctx: OpContext,
  ): Promise<HomeCheckpoint> {
    throwIfDone(ctx, "checkpoint");
    const home = this.homeDir(homeKey);
    await recoverInterruptedRestore(home);
    const next = ((await this.readMarker(homeKey))?.revision ?? 0) + 1;
    if ("mounted" in source) {
      // The live home is this folder: nothing to copy, only the marker moves.
      await mkdir(home, { recursive: true });
      await commit?.(next);
      const checkpoint: HomeCheckpoint = {
        homeKey,
        revision: next,
        createdAt: Date.now(),
        bytes: null,
        files: null,
        digest: null,
        mounted: true,
      };
      await this.writeMarker(checkpoint);
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
      staged = await stageHome(digesting(tar, hash), home, this.limits);
    } finally {
      signal.removeEventListener("abort", onAbort);
      await resume?.();
    }
    try {
      throwIfDone(ctx, "checkpoint");
      await commit?.(next);
    } catch (error) {
      // The fence (or the caller) said no: the previous copy stays the latest.
      await staged.discard();
      throw error;
    }
    await staged.swapIn();
    const checkpoint: HomeCheckpoint = {
      homeKey,
      revision: next,
      createdAt: Date.now(),
      bytes: staged.stats.bytes,
      files: staged.stats.files,
      digest: `sha256:${hash.digest("hex")}`,
      mounted: false,
    };
    await this.writeMarker(checkpoint);
    return checkpoint;
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

  private async readMarker(homeKey: string): Promise<RevisionMarker | undefined> {
    const text = await readFile(this.markerPath(homeKey), "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as RevisionMarker;
    } catch (error) {
      throw new AgentComputerError(
        "CHECKPOINT_CORRUPT",
        `The revision marker ${this.markerPath(homeKey)} is not valid JSON; restore it from a backup or remove it.`,
        { cause: error },
      );
    }
  }

  /** Written to a temporary file and renamed, so a crash leaves the old or the new marker, never half of one. */
  private async writeMarker(marker: RevisionMarker): Promise<void> {
    const path = this.markerPath(marker.homeKey);
    await mkdir(join(this.dataDir, "home-revisions"), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(marker)}\n`);
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
