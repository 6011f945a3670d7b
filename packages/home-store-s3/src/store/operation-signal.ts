import { setMaxListeners } from "node:events";
import { type OpContext, signalOf } from "@agent-computer/core";
import type { StoreSettings } from "./store-context.js";

/**
 * The abort signal of one checkpoint or restore (core's `signalOf`: a
 * signal of its own, so this changes nothing of the caller's). Each request
 * in flight listens on it, and a chunked restore has up to three times
 * `chunkConcurrency` of them (chunks and packs ahead), which passed Node's
 * default of ten and printed a MaxListenersExceededWarning on every
 * checkpoint and restore of the s3 bench: the bound is what the settings
 * allow in flight, with room for the store's own listeners.
 */
export function operationSignal(ctx: OpContext, what: "checkpoint" | "restore", settings: StoreSettings): AbortSignal {
  const signal = signalOf(ctx, what);
  setMaxListeners(3 * Math.max(settings.chunkConcurrency, settings.partConcurrency) + 10, signal);
  return signal;
}
