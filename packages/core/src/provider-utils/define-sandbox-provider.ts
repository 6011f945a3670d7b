import type { ResolvedComputerSpec } from "../contract/computer-spec.js";
import { signalOf } from "../contract/op-context.js";
import { providerRefId } from "../contract/provider-ref.js";
import type { SandboxProvider } from "../contract/sandbox-provider.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { enterOperation } from "./enter-operation.js";
import { listRequestOf } from "./list-request.js";
import { provisionRequestOf } from "./provision-request.js";
import type { SandboxProviderDefinition } from "./sandbox-provider-definition.js";

/**
 * A `SandboxProvider` ("v1") from a definition: each verb checks its input
 * and the caller's context, then calls the definition with the checked
 * request.
 */
export function defineSandboxProvider<Id>(definition: SandboxProviderDefinition<Id>): SandboxProvider {
  const { image, screenLimit } = definition.defaults;
  const defaults = { image: image ? Promise.resolve(image) : definition.defaultImage(), screenLimit };
  return {
    specificationVersion: "v1",
    kind: definition.kind,
    capabilities: definition.capabilities,
    provision: async (spec, ctx) =>
      definition.provision(
        await provisionRequestOf(spec, ctx, defaults, (resolved) => {
          refuseUnenforcedEgress(definition.kind, definition.capabilities.egress, resolved);
          definition.checkSpec?.(resolved);
        }),
      ),
    reconnect: async (ref, ctx) => {
      const id = definition.machineId(providerRefId(ref, definition.kind));
      const context = enterOperation(ctx, "reconnect");
      return definition.reconnect(id, { ref, context, signal: signalOf(context, "reconnect") });
    },
    list: async (filter, ctx) => definition.list(listRequestOf(filter, ctx)),
    ...(definition.watchEgressDenials ? { watchEgressDenials: definition.watchEgressDenials } : {}),
  };
}

/** A policy a provider cannot enforce is refused, never ignored: a computer it fences nothing for would run unfenced. */
function refuseUnenforcedEgress(kind: string, enforces: boolean | undefined, spec: ResolvedComputerSpec): void {
  if (spec.egress && !enforces) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `The ${kind} provider does not enforce egress policies; provision without \`egress\` or on a provider whose capabilities.egress is true.`,
    );
  }
}
