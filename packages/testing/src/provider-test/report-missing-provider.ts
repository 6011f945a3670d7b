import { describe, it } from "vitest";

/**
 * Registers a suite that cannot run on this machine: failing under CI (CI
 * must never pass by not testing), skipped with the reason elsewhere.
 */
export function reportMissingProvider(
  suite: string,
  chosen: { readonly kind: string; readonly missing?: string },
): void {
  const missing = chosen.missing ?? "nothing is missing";
  const needs = `needs a ${chosen.kind} provider that can run on this machine`;
  if (process.env.CI) {
    describe(suite, () => {
      it(needs, () => {
        throw new Error(`CI is set and ${missing}`);
      });
    });
  } else {
    describe.skip(`${suite} (skipped: ${missing})`, () => {
      it(needs, () => {});
    });
  }
}
