import type { ScreenEndpoint } from "@agent-computer/core";

/** What `ScreenAuthority.open` gives: the gateway endpoint and how to end it. */
export interface ScreenGrant {
  /** Sealed into the capability; its url and token never leave the host. */
  readonly endpoint: ScreenEndpoint;
  /** Ends the endpoint at the gateway (its sockets drop). Idempotent. */
  revoke(): Promise<void>;
}
