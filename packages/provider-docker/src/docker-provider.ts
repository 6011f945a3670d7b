import { randomBytes } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import {
  AgentComputerError,
  loggerOf,
  type ProviderCapabilities,
  parseInput,
  type SandboxProvider,
} from "@agent-computer/core";
import { defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import {
  computerImageRef,
  computerSeccompProfile,
  DISPLAY_APART_CHROMIUM_POLICY,
  LOOPBACK_PROXY_COMMAND,
  SCREEN_GATEWAY_PORT,
} from "@agent-computer/desktop-runtime";
import { EgressDenialListeners } from "@agent-computer/egress";
import Docker from "dockerode";
import { COMPUTER_GID, COMPUTER_UID, readyHomeForComputer } from "./computer-home-owner.js";
import { COMPUTER_LABELS, DISPLAY_LABELS } from "./computer-labels.js";
import { networkPreparer } from "./computer-network.js";
import {
  type ComputerContainerSettings,
  type ContainerRole,
  containerSpec,
  createContainer,
  startContainer,
} from "./container-spec.js";
import { removeOrphanDisplays } from "./display-containers.js";
import { pairNetworkName, removeOrphanPairNetworks } from "./display-network.js";
import type { DisplayPlan, DisplayStartHost } from "./display-start.js";
import { DockerMachine } from "./docker-machine.js";
import type { DockerMachineHost } from "./docker-machine-host.js";
import { type DockerProviderOptions, dockerProviderOptionsSchema } from "./docker-provider-options.js";
import { removeCredentials } from "./egress-credentials.js";
import { EGRESS_CHROMIUM_POLICY, EGRESS_LABELS } from "./egress-labels.js";
import { EgressProxyKeeper } from "./egress-proxy-container.js";
import { engineFailure, engineStatus } from "./engine-failure.js";
import { createFencedComputer } from "./fenced-computer.js";

/**
 * Desktops (several per computer) from the shared Linux desktop runtime;
 * stop keeps the container; the home is a mounted host folder.
 */
export const DOCKER_CAPABILITIES: ProviderCapabilities = {
  desktop: true,
  egress: true,
  multiScreen: true,
  pageBrowser: true,
  terminal: true,
  billsWhileRunning: false,
  stopKeepsMachine: true,
  mountedHome: true,
};

const CONTAINER_ID = /^[0-9a-f]{64}$/;

/**
 * Computers as sibling containers of a Docker engine (docs/architecture.md §9): one
 * container per computer from the computer image, running as uid 1000 with
 * the image's seccomp profile, never privileged, never on the host network;
 * the home bind-mounted from `<dataDir>/homes/<homeKey>`.
 */
export function dockerProvider(options: DockerProviderOptions): SandboxProvider {
  const parsed = parseInput(dockerProviderOptionsSchema, options, "DockerProviderOptions");
  const docker = parsed.docker ?? new Docker();
  const dataDir = resolve(parsed.dataDir);
  const host: DockerMachineHost = {
    docker,
    user: `${COMPUTER_UID}:${COMPUTER_GID}`,
    stopTimeoutSeconds: parsed.stopTimeoutSeconds,
  };
  // Load lazily: a caller passing its own profile never reads the file.
  const seccomp = () => parsed.seccompProfile ?? computerSeccompProfile();
  const prepareNetwork = networkPreparer(docker, parsed.network);
  const denials = new EgressDenialListeners(parsed.onEgressDenied);
  const egressProxy = new EgressProxyKeeper({
    docker,
    dataDir,
    bridgeNetwork: prepareNetwork,
    onDenied: denials.notify,
    ...(parsed.egressUpstreamCa ? { upstreamCa: parsed.egressUpstreamCa } : {}),
  });

  // How a display container is made, on its computer's first desktop call (display-start.ts).
  const displayHost: DisplayStartHost = {
    docker,
    networkPool: parsed.displayNetworkPool,
    seccomp,
    bridgeNetwork: prepareNetwork,
    // Rewritten at each display start (the policy may have changed with the package), mounted read-only
    // into the display container; replaced whole, so a display starting meanwhile never reads half of it.
    policyFile: async (fenced) => {
      const file = join(dataDir, "display", fenced ? "chromium-policy-egress.json" : "chromium-policy.json");
      await mkdir(dirname(file), { recursive: true });
      // Downloads go to the workspace, as they did when the display's HOME was the workspace.
      const policy = {
        ...DISPLAY_APART_CHROMIUM_POLICY,
        DownloadDirectory: `${parsed.workspacePath}/Downloads`,
        ...(fenced ? EGRESS_CHROMIUM_POLICY : {}),
      };
      const written = `${file}.${randomBytes(4).toString("hex")}`;
      await writeFile(written, JSON.stringify(policy), { mode: 0o644 });
      await rename(written, file);
      return file;
    },
  };
  const machineOptions = (screenLimit: number, display: DisplayPlan | undefined, fenced = false) => ({
    screenLimit,
    desktopTransport: parsed.desktopTransport,
    ...(display ? { display: { plan: display, host: displayHost } } : {}),
    fenced,
    // A fenced computer's credentials file and CA go with it (egress-credentials.ts).
    ...(fenced && display ? { afterDestroy: () => removeCredentials(egressProxy.dir, display.network) } : {}),
  });

  const machineOf = (info: Docker.ContainerInspectInfo): DockerMachine => {
    const workspacePath = info.Config.Labels?.[COMPUTER_LABELS.workspacePath] ?? parsed.workspacePath;
    const mount = info.Mounts.find((m) => m.Destination === workspacePath);
    if (!mount) {
      throw new AgentComputerError("UNAVAILABLE", `docker:${info.Id} has no home mounted at ${workspacePath}.`, {
        retryable: false,
      });
    }
    const screenLimit = Number(info.Config.Labels?.[COMPUTER_LABELS.screenLimit] ?? parsed.screenLimit);
    const container = info.Config.Labels?.[DISPLAY_LABELS.displayContainer];
    const network = info.Config.Labels?.[DISPLAY_LABELS.displayNetwork];
    return new DockerMachine(
      host,
      info.Id,
      workspacePath,
      mount.Source,
      machineOptions(
        Number.isInteger(screenLimit) ? screenLimit : 0,
        container && network ? { container, network } : undefined,
        info.Config.Labels?.[EGRESS_LABELS.policy] !== undefined,
      ),
    );
  };

  return defineSandboxProvider({
    kind: "docker",
    capabilities: DOCKER_CAPABILITIES,
    defaults: parsed,
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("docker", id, CONTAINER_ID, "<64 hex digit container id>")[0],
    watchEgressDenials: denials.watch,

    async provision({ spec: resolved, image, context, signal }) {
      const homeDir = join(dataDir, "homes", resolved.homeKey);
      await mkdir(homeDir, { recursive: true });
      await readyHomeForComputer(homeDir).catch((error: Error) => {
        throw new AgentComputerError(
          "UNAVAILABLE",
          `Cannot give ${homeDir} to uid ${COMPUTER_UID}, which the computer runs as: ${error.message}. Run this process as root or as uid ${COMPUTER_UID}.`,
          { cause: error, retryable: false },
        );
      });
      const resources = { ...parsed.resources, ...resolved.resources };
      const screenLimit = resolved.screenLimit;
      const network = await prepareNetwork();
      const labels = {
        ...resolved.labels,
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: resolved.computerId,
        [COMPUTER_LABELS.homeKey]: resolved.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(screenLimit),
        [COMPUTER_LABELS.workspacePath]: parsed.workspacePath,
      };
      const nameOf = (role: ContainerRole) =>
        `agent-computer-${resolved.homeKey.slice(0, 48)}-${role === "display" ? "display-" : ""}${randomBytes(4).toString("hex")}`;
      const settings: ComputerContainerSettings = {
        image,
        user: host.user,
        workspacePath: parsed.workspacePath,
        homeDir,
        network,
        resources,
        shmBytes: parsed.shmBytes,
        seccomp: seccomp(),
        labels,
      };
      const provisioned = (containerId: string, display?: DisplayPlan, fenced = false) => {
        loggerOf(context).info("docker machine provisioned", {
          ref: `docker:${containerId}`,
          homeKey: resolved.homeKey,
          image,
        });
        return new DockerMachine(
          host,
          containerId,
          parsed.workspacePath,
          homeDir,
          machineOptions(screenLimit, display, fenced),
        );
      };
      const policy = resolved.egress ?? parsed.egress;
      if (policy && (!parsed.displayContainer || parsed.ports.length > 0)) {
        throw new AgentComputerError(
          "UNSUPPORTED",
          "An egress policy needs the display in its own container and no published ports (dockerProvider({ displayContainer: true, ports: [] })): the computer's only network is then internal, with the egress proxy on it.",
        );
      }
      if (!parsed.displayContainer) {
        // The screen gateway's port is published where the gateway runs (loopback only; its websockets need a token).
        const published = [...new Set([SCREEN_GATEWAY_PORT, ...parsed.ports])];
        const spec = containerSpec(settings, nameOf("computer"), { published });
        const container = await createContainer(docker, signal, "computer", spec);
        await startContainer(container, "computer", signal);
        return provisioned(container.id);
      }
      // Only the computer: its labels name its display container and the network the two will share
      // (display-network.ts), both made on the first desktop call (display-start.ts), so a computer that
      // only runs shells never has them. Displays and pair networks left by computers that are gone
      // are removed meanwhile (display-containers.ts); that sweep's failure fails no provision.
      const sweep = sweepOrphanDisplays(docker, signal).catch((error: Error) =>
        loggerOf(context).warn("could not remove displays whose computer is gone", { error: error.message }),
      );
      const displayName = nameOf("display");
      const display = { container: displayName, network: pairNetworkName(displayName) };
      if (policy) {
        try {
          const id = await createFencedComputer({
            docker,
            egressProxy,
            computerId: resolved.computerId,
            policy,
            settings,
            display,
            containerName: nameOf("computer"),
            networkPool: parsed.displayNetworkPool,
            signal,
          });
          return provisioned(id, display, true);
        } finally {
          await sweep;
        }
      }
      const spec = containerSpec(
        {
          ...settings,
          labels: {
            ...labels,
            [DISPLAY_LABELS.displayContainer]: display.container,
            [DISPLAY_LABELS.displayNetwork]: display.network,
          },
        },
        nameOf("computer"),
        { published: parsed.ports, cmd: [...LOOPBACK_PROXY_COMMAND] },
      );
      try {
        const container = await createContainer(docker, signal, "computer", spec);
        await startContainer(container, "computer", signal);
        return provisioned(container.id, display);
      } finally {
        await sweep;
      }
    },

    async reconnect(id, { ref, signal }) {
      const container = docker.getContainer(id);
      let info: Docker.ContainerInspectInfo;
      try {
        info = await container.inspect({ abortSignal: signal });
      } catch (error) {
        if (engineStatus(error) === 404) return "gone";
        throw engineFailure(error, `reconnect ${ref}`);
      }
      // Not one of ours, or on its way out: never drive it.
      if (info.Config.Labels?.[COMPUTER_LABELS.managed] !== "true") return "gone";
      if (info.State.Dead || info.State.Status === "removing") return "gone";
      try {
        if (info.State.Paused) await container.unpause({ abortSignal: signal });
        else if (!info.State.Running) await container.start({ abortSignal: signal });
      } catch (error) {
        const status = engineStatus(error);
        if (status === 404) return "gone";
        if (status !== 304) throw engineFailure(error, `resume ${ref}`);
      }
      const machine = machineOf(info);
      await machine.resumeDisplay(signal);
      return machine;
    },

    async list({ labels, running, signal }) {
      try {
        const found = await docker.listContainers({
          all: true,
          filters: JSON.stringify({
            label: [`${COMPUTER_LABELS.managed}=true`, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)],
            ...(running ? { status: ["running"] } : {}),
          }),
          abortSignal: signal,
        });
        return found
          .sort((a, b) => a.Created - b.Created || a.Id.localeCompare(b.Id))
          .map((c) => `docker:${c.Id}` as const);
      } catch (error) {
        throw engineFailure(error, "list computers");
      }
    },
  });
}

/** Display containers whose computer is gone, then the pair networks they leave. */
async function sweepOrphanDisplays(docker: Docker, signal: AbortSignal): Promise<void> {
  await removeOrphanDisplays(docker, signal);
  await removeOrphanPairNetworks(docker, signal);
}
