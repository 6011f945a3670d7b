import type { SandboxProvider } from "@agent-computer/core";

/** What a candidate's check found on this machine; `missing` says what is not there and how to get it. */
export interface ProviderCheck {
  readonly missing?: string;
}

/**
 * A provider a suite or bench can run on, as its package offers it: how to
 * find what it needs on this machine (an engine, an image, a server) and
 * how to make it. For Docker:
 * `{ kind: "docker", check: checkDockerHost, create: dockerProvider }`.
 */
export interface TestProviderCandidate<Found extends ProviderCheck, Options> {
  /** The provider kind, as in its refs. */
  readonly kind: string;
  /** Looks for what the provider needs; never throws, says what is missing instead. */
  check(): Promise<Found>;
  /** Makes the provider from what `check` found (all but `missing`) and the suite's own options. */
  create(options: Options): SandboxProvider;
}
