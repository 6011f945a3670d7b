import type { ComputerSpec } from "./computer-spec.js";
import type { EgressDenial } from "./egress-policy.js";
import type { ListFilter } from "./list-filter.js";
import type { Machine } from "./machine.js";
import type { OpContext } from "./op-context.js";
import type { ProviderCapabilities } from "./provider-capabilities.js";
import type { ProviderRef } from "./provider-ref.js";

/**
 * The contract every provider implements (Docker, Kubernetes, E2B, Daytona,
 * Box, the fake one). Prove an implementation with
 * `defineProviderConformance` from `@agent-computer/core/conformance`.
 */
export interface SandboxProvider {
  /** Lets the contract evolve while old providers keep working. */
  readonly specificationVersion: "v1";
  /** "docker", "kubernetes", "e2b", ...; the prefix of every ref it makes. */
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  /** Creates a new machine for `spec`. */
  provision(spec: ComputerSpec, ctx?: OpContext): Promise<Machine>;
  /**
   * Finds the machine behind `ref` (resuming it if stopped). Never creates
   * one: a missing machine is "gone". A ref of another kind is refused with
   * INVALID_ARGUMENT.
   */
  reconnect(ref: ProviderRef, ctx?: OpContext): Promise<Machine | "gone">;
  /** Refs of this provider's machines that carry all the given labels. */
  list(filter: ListFilter, ctx?: OpContext): Promise<ProviderRef[]>;
  /**
   * Subscribes to the requests this provider's egress fence refused, for
   * every computer it fences (the runtime turns each into an
   * `egress-denied` event); returns the unsubscribe function. Only a
   * provider with `capabilities.egress` offers it.
   */
  watchEgressDenials?(listener: (denial: EgressDenial) => void): () => void;
}
