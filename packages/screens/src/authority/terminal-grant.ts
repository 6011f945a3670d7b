import type { TerminalEndpoint } from "@agent-computer/core";

/** What `ScreenAuthority.openTerminal` gives: the gateway endpoint and how to end it. */
export interface TerminalGrant {
  /** Sealed into the capability; its url and token never leave the host. */
  readonly endpoint: TerminalEndpoint;
  /** Ends the endpoint at the gateway (its shells hang up). Idempotent. */
  revoke(): Promise<void>;
}
