import type { ScreenPolicy } from "../screen-policy.js";
import type { SealedCapability } from "./sealed-capability.js";

/** The secret-free part of a capability that events and log lines carry. */
export function policyOf(capability: SealedCapability): ScreenPolicy {
  return { mode: capability.mode, computerId: capability.computerId, botId: capability.botId };
}
