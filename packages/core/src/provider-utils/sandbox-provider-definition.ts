import type { ResolvedComputerSpec } from "../contract/computer-spec.js";
import type { EgressDenial } from "../contract/egress-policy.js";
import type { Machine } from "../contract/machine.js";
import type { ProviderCapabilities } from "../contract/provider-capabilities.js";
import type { ProviderRef } from "../contract/provider-ref.js";
import type { ListRequest } from "./list-request.js";
import type { ProvisionDefaults, ProvisionRequest } from "./provision-request.js";
import type { ReconnectRequest } from "./reconnect-request.js";

/**
 * A provider as its platform translates it: the three verbs on checked
 * requests. `defineSandboxProvider` turns it into a `SandboxProvider`,
 * checking each call's input and context first, in the contract's order
 * (input, then context), so that every provider refuses bad calls alike.
 */
export interface SandboxProviderDefinition<Id> {
  /** "docker", "kubernetes", ...: the prefix of every ref. */
  readonly kind: string;
  readonly capabilities: ProviderCapabilities;
  /** What `provision` fills in where a spec is silent (the provider's parsed options will do). */
  readonly defaults: ProvisionDefaults;
  /** The image when neither the spec nor `defaults` names one; asked once, when the provider is made. */
  defaultImage(): Promise<string>;
  /** Refuses a spec this platform cannot take (its label rules, say), before the context is looked at. */
  checkSpec?(spec: ResolvedComputerSpec): void;
  /**
   * The machine id in a ref of this kind (the part after `kind:`), checked:
   * INVALID_ARGUMENT for one this provider never made (see `matchRefId`).
   */
  machineId(id: string): Id;
  provision(request: ProvisionRequest): Promise<Machine>;
  /** Finds the machine behind a checked id; "gone" when it is missing or not one of this provider's. */
  reconnect(id: Id, request: ReconnectRequest): Promise<Machine | "gone">;
  list(request: ListRequest): Promise<ProviderRef[]>;
  /** `SandboxProvider.watchEgressDenials`, passed on as it is: a provider with `capabilities.egress` gives it. */
  watchEgressDenials?(listener: (denial: EgressDenial) => void): () => void;
}
