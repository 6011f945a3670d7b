import type { ComputerSpec, Machine, OpContext, SandboxProvider } from "@agent-computer/core";

/**
 * `provider` with its `provision` taken over by `provision`, which may call
 * the provider's own (`next`): for tests that hold, fail, count or slow
 * provisioning (a worker that hangs mid-operation, an image that is
 * missing) while every other call reaches the provider as it is.
 */
export function withProvision(
  provider: SandboxProvider,
  provision: (spec: ComputerSpec, ctx: OpContext | undefined, next: () => Promise<Machine>) => Promise<Machine>,
): SandboxProvider {
  return {
    specificationVersion: provider.specificationVersion,
    kind: provider.kind,
    capabilities: provider.capabilities,
    reconnect: (ref, ctx) => provider.reconnect(ref, ctx),
    list: (filter, ctx) => provider.list(filter, ctx),
    provision: (spec, ctx) => provision(spec, ctx, () => provider.provision(spec, ctx)),
  };
}
