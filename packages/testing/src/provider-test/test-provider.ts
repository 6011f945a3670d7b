import type { SandboxProvider } from "@agent-computer/core";
import type { ProviderCheck } from "./test-provider-candidate.js";

/** The options a suite still gives once the check's findings are filled in. */
export type SuiteProviderOptions<Found, Options> = Omit<Options, Exclude<keyof Found, "missing">>;

/**
 * The provider chosen for a suite: what its check found (`missing` when it
 * cannot run here) and a maker of fresh providers on it.
 */
export type TestProvider<Found extends ProviderCheck, Options> = Found & {
  readonly kind: string;
  /** A provider on what was found, with the suite's own options (a data folder, published ports). */
  readonly provider: Partial<SuiteProviderOptions<Found, Options>> extends SuiteProviderOptions<Found, Options>
    ? (options?: SuiteProviderOptions<Found, Options>) => SandboxProvider
    : (options: SuiteProviderOptions<Found, Options>) => SandboxProvider;
};
