import type { SandboxProvider } from "@agent-computer/core";
import type { SandboxProviderName } from "./sandbox-provider-name.js";

/** What `providerFromEnvironment` chose, and why, in words for the person who started it. */
export interface ChosenProvider {
  readonly name: SandboxProviderName;
  readonly provider: SandboxProvider;
  /** One line: which provider and what chose it ("SANDBOX_PROVIDER=e2b", "no Docker engine answers (...)"). */
  readonly reason: string;
}
