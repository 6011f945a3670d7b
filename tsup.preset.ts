import { defineConfig, type Options } from "tsup";

/**
 * Whether this build writes declaration files. `npm test` builds without
 * them (scripts/build-packages.mjs --no-types): no test reads a .d.ts, and
 * they are most of a build's time. The typecheck, the consumer test and a
 * publish build them (docs/testing.md, "Two tiers").
 */
export const BUILD_TYPES = process.env.AGENT_COMPUTER_BUILD_TYPES !== "0";

/**
 * The build of every library package (docs/architecture.md §1): ESM with
 * shared chunks, so each module (AgentComputerError above all) exists once
 * across a package's entries; CJS per entry; types for both.
 */
export function packageBuild(
  entry: Record<string, string>,
  options: {
    /** Entries that import vitest (ESM only), so they get no CJS build. */
    esmOnly?: string[];
    /**
     * ESM-only dependencies the CJS build must carry: a require() of them
     * gets the module namespace, not their export (p-queue, p-timeout).
     */
    bundleInCjs?: string[];
  } = {},
): Options[] {
  const common = { sourcemap: true, target: "node20" } as const;
  const cjsEntry = Object.fromEntries(Object.entries(entry).filter(([name]) => !options.esmOnly?.includes(name)));
  return defineConfig([
    { ...common, entry, format: ["esm"], splitting: true, external: ["vitest"] },
    { ...common, entry: cjsEntry, format: ["cjs"], noExternal: options.bundleInCjs ?? [] },
    // Types in one pass: one rollup of the declarations writes both .d.ts and
    // .d.cts (a dts build per format checked every file twice). ESM-only
    // entries get an unused .d.cts too, so the .d.ts chunks stay shared.
    ...(BUILD_TYPES ? [{ ...common, entry, format: ["esm", "cjs"], dts: { only: true }, external: ["vitest"] }] : []),
  ] as Options[]) as Options[];
}
