import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
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
  CHROMIUM_MANAGED_POLICY_FILE,
  computerImageRef,
  computerSeccompProfile,
  DISPLAY_APART_CHROMIUM_POLICY,
  LOOPBACK_PROXY_COMMAND,
  LOOPBACK_PROXY_ENV,
  LOOPBACK_PROXY_PORT,
  SCREEN_GATEWAY_PORT,
} from "@agent-computer/desktop-runtime";
import Docker from "dockerode";
import { COMPUTER_GID, COMPUTER_UID, giveHomeToComputer } from "./computer-home-owner.js";
import { COMPUTER_LABELS, DISPLAY_LABELS } from "./computer-labels.js";
import { networkPreparer } from "./computer-network.js";
import { removeOrphanDisplays } from "./display-containers.js";
import {
  COMPUTER_ALIAS,
  createPairNetwork,
  joinPairNetwork,
  pairNetworkName,
  removeOrphanPairNetworks,
  removePairNetwork,
} from "./display-network.js";
import { DockerMachine } from "./docker-machine.js";
import type { DockerMachineHost } from "./docker-machine-host.js";
import { type DockerProviderOptions, dockerProviderOptionsSchema } from "./docker-provider-options.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

/**
 * Desktops (several per computer) from the shared Linux desktop runtime;
 * stop keeps the container; the home is a mounted host folder.
 */
export const DOCKER_CAPABILITIES: ProviderCapabilities = {
  desktop: true,
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

  // Rewritten at each provision (the policy may have changed with the package), mounted read-only into each display container.
  const displayPolicyFile = async () => {
    const file = join(dataDir, "display", "chromium-policy.json");
    await mkdir(dirname(file), { recursive: true });
    // Downloads go to the workspace, as they did when the display's HOME was the workspace.
    const policy = { ...DISPLAY_APART_CHROMIUM_POLICY, DownloadDirectory: `${parsed.workspacePath}/Downloads` };
    await writeFile(file, JSON.stringify(policy), { mode: 0o644 });
    return file;
  };

  const machineOf = (info: Docker.ContainerInspectInfo): DockerMachine => {
    const workspacePath = info.Config.Labels?.[COMPUTER_LABELS.workspacePath] ?? parsed.workspacePath;
    const mount = info.Mounts.find((m) => m.Destination === workspacePath);
    if (!mount) {
      throw new AgentComputerError("UNAVAILABLE", `docker:${info.Id} has no home mounted at ${workspacePath}.`, {
        retryable: false,
      });
    }
    const screenLimit = Number(info.Config.Labels?.[COMPUTER_LABELS.screenLimit] ?? parsed.screenLimit);
    const displayContainerId = info.Config.Labels?.[DISPLAY_LABELS.displayContainer];
    const displayNetwork = info.Config.Labels?.[DISPLAY_LABELS.displayNetwork];
    return new DockerMachine(host, info.Id, workspacePath, mount.Source, {
      screenLimit: Number.isInteger(screenLimit) ? screenLimit : 0,
      desktopTransport: parsed.desktopTransport,
      ...(displayContainerId ? { displayContainerId } : {}),
      ...(displayNetwork ? { displayNetwork } : {}),
    });
  };

  return defineSandboxProvider({
    kind: "docker",
    capabilities: DOCKER_CAPABILITIES,
    defaults: parsed,
    defaultImage: computerImageRef,
    machineId: (id) => matchRefId("docker", id, CONTAINER_ID, "<64 hex digit container id>")[0],

    async provision({ spec: resolved, image, context, signal }) {
      const homeDir = join(dataDir, "homes", resolved.homeKey);
      await mkdir(homeDir, { recursive: true });
      await giveHomeToComputer(homeDir, false).catch((error: Error) => {
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
        [COMPUTER_LABELS.computerId]: resolved.computerId,
        [COMPUTER_LABELS.homeKey]: resolved.homeKey,
        [COMPUTER_LABELS.screenLimit]: String(screenLimit),
        [COMPUTER_LABELS.workspacePath]: parsed.workspacePath,
      };
      const nameOf = (role: ContainerRole) =>
        `agent-computer-${resolved.homeKey.slice(0, 48)}-${role === "display" ? "display-" : ""}${randomBytes(4).toString("hex")}`;
      const create = (
        role: ContainerRole,
        name: string,
        published: number[],
        roleLabels: Record<string, string>,
        { mounts = [], env = [], cmd = ["sleep", "infinity"], home = parsed.workspacePath }: ContainerExtras = {},
      ) =>
        createContainer(docker, signal, role, {
          name,
          Image: image,
          Cmd: cmd,
          User: host.user,
          WorkingDir: parsed.workspacePath,
          // The screen gateway takes connections from the host's end of the
          // computer's network only, never from another computer on it.
          Env: [`HOME=${home}`, "LANG=C.UTF-8", "AGENT_COMPUTER_GATEWAY_SOURCES=default-gateway", ...env],
          Labels: { ...labels, ...roleLabels },
          ExposedPorts: Object.fromEntries(published.map((p) => [`${p}/tcp`, {}])),
          HostConfig: {
            Mounts: [{ Type: "bind", Source: homeDir, Target: parsed.workspacePath }, ...mounts],
            NetworkMode: network,
            PortBindings: Object.fromEntries(
              published.map((p) => [`${p}/tcp`, [{ HostIp: "127.0.0.1", HostPort: "" }]]),
            ),
            Privileged: false,
            // A real init reaps the orphans that commands leave behind.
            Init: true,
            ShmSize: parsed.shmBytes,
            SecurityOpt: [`seccomp=${seccomp()}`, "no-new-privileges:true"],
            // Every process runs as the workspace user with no effective
            // capability; the bounding set keeps only CAP_SYS_CHROOT, which
            // Chromium's namespace sandbox needs inside its own user
            // namespace (measured: with none, it aborts; image/README.md).
            CapDrop: ["ALL"],
            CapAdd: ["SYS_CHROOT"],
            NanoCpus: Math.round(resources.cpus * 1e9),
            Memory: resources.memoryMb * 1024 * 1024,
            // The whole computer, not one process: Chromium's threads count too.
            MemorySwap: resources.memoryMb * 1024 * 1024,
            PidsLimit: resources.pidsLimit,
          },
        });
      const provisioned = (containerId: string, display?: { containerId: string; network: string }) => {
        loggerOf(context).info("docker machine provisioned", {
          ref: `docker:${containerId}`,
          homeKey: resolved.homeKey,
          image,
        });
        return new DockerMachine(host, containerId, parsed.workspacePath, homeDir, {
          screenLimit,
          desktopTransport: parsed.desktopTransport,
          ...(display ? { displayContainerId: display.containerId, displayNetwork: display.network } : {}),
        });
      };
      // The screen gateway's port is published where the gateway runs (loopback only; its websockets need a token).
      const ports = [...new Set([SCREEN_GATEWAY_PORT, ...parsed.ports])];
      if (!parsed.displayContainer) {
        const container = await create("computer", nameOf("computer"), ports, { [COMPUTER_LABELS.managed]: "true" });
        await startContainer(container, "computer", signal);
        return provisioned(container.id);
      }
      // The computer first, naming its display; then the display, naming the computer's id
      // (display-containers.ts: no display ever exists without its computer). The two share a
      // network of their own, on which the display's browser reaches the computer's loopback
      // proxy (display-network.ts).
      await removeOrphanDisplays(docker, signal);
      await removeOrphanPairNetworks(docker, signal);
      const displayName = nameOf("display");
      const pairNetwork = await createPairNetwork(
        docker,
        pairNetworkName(displayName),
        parsed.displayNetworkPool,
        signal,
      );
      let container: Docker.Container | undefined;
      try {
        container = await create(
          "computer",
          nameOf("computer"),
          parsed.ports,
          {
            [COMPUTER_LABELS.managed]: "true",
            [DISPLAY_LABELS.displayContainer]: displayName,
            [DISPLAY_LABELS.displayNetwork]: pairNetwork,
          },
          { cmd: [...LOOPBACK_PROXY_COMMAND] },
        );
        await joinPairNetwork(docker, pairNetwork, container.id, [COMPUTER_ALIAS], signal);
        const policy = await displayPolicyFile();
        const display = await create(
          "display",
          displayName,
          [SCREEN_GATEWAY_PORT],
          { [DISPLAY_LABELS.displayOf]: container.id },
          {
            mounts: [
              { Type: "bind", Source: policy, Target: CHROMIUM_MANAGED_POLICY_FILE, ReadOnly: true },
              {
                Type: "tmpfs",
                Source: "",
                Target: DISPLAY_HOME,
                TmpfsOptions: { Mode: 0o1777, SizeBytes: DISPLAY_HOME_BYTES },
              },
            ],
            env: [`${LOOPBACK_PROXY_ENV}=socks5://${COMPUTER_ALIAS}:${LOOPBACK_PROXY_PORT}`, ...DISPLAY_HOME_ENV],
            home: DISPLAY_HOME,
          },
        );
        await joinPairNetwork(docker, pairNetwork, display.id, [], signal);
        await startContainer(display, "display", signal);
        await startContainer(container, "computer", signal);
      } catch (error) {
        await container?.remove({ force: true }).catch(() => {});
        await docker
          .getContainer(displayName)
          .remove({ force: true })
          .catch(() => {});
        await removePairNetwork(docker, pairNetwork).catch(() => {});
        throw error;
      }
      return provisioned(container.id, { containerId: displayName, network: pairNetwork });
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

type ContainerRole = "computer" | "display";

/** What one role's container adds to the shared settings. */
interface ContainerExtras {
  readonly mounts?: Docker.MountSettings[];
  readonly env?: string[];
  readonly cmd?: string[];
  /** `HOME` (the workspace unless said). */
  readonly home?: string;
}

/**
 * The display container's own home: its programs (openbox, x11vnc, Chromium's
 * NSS database and fonts, Python) take their configuration from here, never
 * from the workspace home, which the bot writes (issue 45, finding 1). The
 * workspace is still where bots' profiles and downloads live (`--home`, the
 * policy's DownloadDirectory).
 */
const DISPLAY_HOME = "/run/agent-computer-display";
/** Room for its programs' caches and logs (counted in the display container's memory). */
const DISPLAY_HOME_BYTES = 256 * 1024 * 1024;
const DISPLAY_HOME_ENV = [
  `XDG_CONFIG_HOME=${DISPLAY_HOME}/config`,
  `XDG_DATA_HOME=${DISPLAY_HOME}/data`,
  `XDG_CACHE_HOME=${DISPLAY_HOME}/cache`,
  `XDG_STATE_HOME=${DISPLAY_HOME}/state`,
  "PYTHONNOUSERSITE=1",
];
const containerNoun = (role: ContainerRole) => (role === "display" ? "display container" : "container");

/** Creates one container of a computer (not started). */
async function createContainer(
  docker: Docker,
  signal: AbortSignal,
  role: ContainerRole,
  spec: Docker.ContainerCreateOptions,
): Promise<Docker.Container> {
  try {
    return await docker.createContainer({ ...spec, abortSignal: signal });
  } catch (error) {
    if (engineStatus(error) === 404) {
      throw new AgentComputerError(
        "NOT_FOUND",
        `The image ${spec.Image} is not on the engine; build it with \`npx agent-computer-image build\` or set AGENT_COMPUTER_IMAGE.`,
        { cause: error },
      );
    }
    throw engineFailure(error, `create the computer's ${containerNoun(role)}`);
  }
}

/** Starts a created container; one that does not start is removed. */
async function startContainer(container: Docker.Container, role: ContainerRole, signal: AbortSignal): Promise<void> {
  try {
    await container.start({ abortSignal: signal });
  } catch (error) {
    await container.remove({ force: true }).catch(() => {});
    throw engineFailure(error, `start the computer's ${containerNoun(role)}`);
  }
}
