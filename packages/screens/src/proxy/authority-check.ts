import type { Lease } from "@agent-computer/leases";
import type { ScreenAuthority } from "../authority/screen-authority.js";
import type { ScreenCheckRequest } from "../authority/screen-check-request.js";
import type { CapabilityRegistry } from "../capability/capability-registry.js";
import type { SealedCapability } from "../capability/sealed-capability.js";
import { type AuthorityVerdict, authorityVerdict } from "./authority-verdict.js";

/** Asks the authority whether a socket of a capability may be bridged, or stay bridged. */
export class AuthorityCheck {
  constructor(
    private readonly authority: ScreenAuthority,
    private readonly registry: CapabilityRegistry,
    private readonly timeoutMs: number,
  ) {}

  /** Reports an open socket of the capability as use of its computer; never throws. */
  inUse(capability: SealedCapability): void {
    const { computerId, botId } = capability;
    void Promise.resolve()
      .then(() => this.authority.inUse?.({ computerId, botId }))
      .catch(() => {});
  }

  verdict(capability: SealedCapability): Promise<AuthorityVerdict> {
    return authorityVerdict(() => this.authority.check(this.request(capability)), this.timeoutMs);
  }

  /** What the authority is asked about a socket: a terminal is checked as control, with kind "terminal". */
  private request(capability: SealedCapability): ScreenCheckRequest {
    const { computerId, botId } = capability;
    const kind = capability.mode === "terminal" ? "terminal" : "screen";
    if (capability.mode === "view") return { computerId, botId, mode: "view", kind };
    const held = this.registry.heldControl(capability.id);
    return {
      computerId,
      botId,
      mode: "control",
      kind,
      control: held ?? (Object.freeze({ ...capability.control }) as Lease),
    };
  }
}
