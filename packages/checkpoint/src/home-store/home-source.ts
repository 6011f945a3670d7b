import type { Machine } from "@agent-computer/core";

/**
 * Where a checkpoint reads the home from: a machine's workspace export, a
 * folder of this host, or (for a mounted-home provider such as Docker) the
 * store's own folder, which is the live home, so nothing is copied.
 */
export type HomeSource = { readonly machine: Machine } | { readonly dir: string } | { readonly mounted: true };
