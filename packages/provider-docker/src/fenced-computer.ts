import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { LOOPBACK_PROXY_COMMAND } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { DISPLAY_LABELS } from "./computer-labels.js";
import { type ComputerContainerSettings, containerSpec, createContainer, startContainer } from "./container-spec.js";
import { COMPUTER_ALIAS, ensurePairNetwork, removePairNetwork } from "./display-network.js";
import type { DisplayPlan } from "./display-start.js";
import { prepareCredentials, removeCredentials } from "./egress-credentials.js";
import { EGRESS_LABELS, EGRESS_PROXY_ENV } from "./egress-labels.js";
import { type EgressProxyKeeper, networkPolicyLabel } from "./egress-proxy-container.js";

/** What making a computer with an egress policy takes (README, "Egress by policy"). */
export interface FencedComputerRequest {
  readonly docker: Docker;
  readonly egressProxy: EgressProxyKeeper;
  readonly computerId: string;
  readonly policy: ResolvedEgressPolicy;
  /** The computer's container settings as for any computer; its network is replaced by `display.network`. */
  readonly settings: ComputerContainerSettings;
  /** Its display container's name and the network they share, which is the computer's only one. */
  readonly display: DisplayPlan;
  readonly containerName: string;
  /** `displayNetworkPool`. */
  readonly networkPool: string;
  readonly signal: AbortSignal;
}

/**
 * Makes a fenced computer's container: its one network is the pair network
 * it will share with its display, made now (internal, no address of the
 * host on it), with the egress proxy joined and serving the policy there
 * before the container exists, so its first request already meets the
 * policy. A failed step removes what was made; gives the container's id.
 */
export async function createFencedComputer(request: FencedComputerRequest): Promise<string> {
  const { docker, display, signal } = request;
  const egressDir = request.egressProxy.dir;
  try {
    const credentials = await prepareCredentials(egressDir, display.network, request.computerId, request.policy);
    const label = networkPolicyLabel(request.computerId, credentials.labelPolicy, credentials.credentialsFile);
    await ensurePairNetwork(docker, display.network, request.networkPool, signal, {
      labels: { [EGRESS_LABELS.networkPolicy]: label, [EGRESS_LABELS.networkProxy]: request.egressProxy.name },
      hostless: true,
    });
    await request.egressProxy.serve(display.network, label, request.settings.image, signal);
    const spec = containerSpec(
      {
        ...request.settings,
        network: display.network,
        labels: {
          ...request.settings.labels,
          [DISPLAY_LABELS.displayContainer]: display.container,
          [DISPLAY_LABELS.displayNetwork]: display.network,
          [EGRESS_LABELS.policy]: request.policy.name,
        },
      },
      request.containerName,
      {
        cmd: [...LOOPBACK_PROXY_COMMAND],
        aliases: [COMPUTER_ALIAS],
        // Names the embedded resolver does not know go nowhere: no DNS query leaves through the engine's resolver.
        dns: ["127.0.0.1"],
        env: [...EGRESS_PROXY_ENV, ...credentials.env],
        mounts: credentials.mounts,
      },
    );
    const container = await createContainer(docker, signal, "computer", spec);
    await startContainer(container, "computer", signal);
    return container.id;
  } catch (error) {
    await docker
      .getContainer(request.containerName)
      .remove({ force: true })
      .catch(() => {});
    await removePairNetwork(docker, display.network).catch(() => {});
    await removeCredentials(egressDir, display.network).catch(() => {});
    throw error;
  }
}
