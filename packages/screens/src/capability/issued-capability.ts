import type { Lease } from "@agent-computer/leases";
import type { ScreenPolicy } from "../screen-policy.js";

/** What this process remembers of a capability it issued. */
export interface IssuedCapability {
  readonly policy: ScreenPolicy;
  readonly expiresAt: number;
  /** Ends the gateway endpoint (the authority's grant `revoke`). */
  readonly revoke: () => Promise<void>;
  /** The gateway endpoint's id: a terminal issued later lives under a control screen's. */
  readonly endpointId: string;
  /** For a terminal: the control screen capability it lives under. */
  readonly screen: string | undefined;
  /** The caller's own lease object (renewed by `Screens.updateControl`): a lease engine only accepts what it issued. */
  control: Lease | undefined;
}
