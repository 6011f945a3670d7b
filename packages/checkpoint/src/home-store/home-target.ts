import type { Machine } from "@agent-computer/core";

/**
 * Where a restore writes the home: a machine (through `importWorkspace`), a
 * folder of this host, or a mounted-home provider's machine, whose home
 * already is the store's folder (nothing to copy).
 */
export type HomeTarget = { readonly machine: Machine } | { readonly dir: string } | { readonly mounted: true };
