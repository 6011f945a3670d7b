import { AgentComputerError } from "@agent-computer/core";
import type Docker from "dockerode";
import { engineFailure, engineStatus } from "./engine-failure.js";

/**
 * What both containers of a computer share (the README's "same limits,
 * seccomp profile, capabilities and network"): taken from the spec at
 * provision for the computer's container, and from that container itself
 * when its display container starts later (display-start.ts).
 */
export interface ComputerContainerSettings {
  /** An image reference or id: the display takes the id its computer runs, so a rebuilt tag never splits a pair. */
  readonly image: string;
  /** "1000:1000". */
  readonly user: string;
  readonly workspacePath: string;
  /** The home's folder on the engine's host, bind-mounted at `workspacePath`. */
  readonly homeDir: string;
  readonly network: string;
  readonly resources: { readonly cpus: number; readonly memoryMb: number; readonly pidsLimit: number };
  readonly shmBytes: number;
  /** The seccomp profile as JSON text. */
  readonly seccomp: string;
  readonly labels: Record<string, string>;
}

/** What one role's container adds to the shared settings. */
export interface ContainerExtras {
  /** Container ports published on the host's loopback (random host ports). */
  readonly published?: number[];
  readonly mounts?: Docker.MountSettings[];
  readonly env?: string[];
  readonly cmd?: string[];
  /** `HOME` (the workspace unless said). */
  readonly home?: string;
  /** Names the container answers to on `settings.network` (a user-defined network). */
  readonly aliases?: string[];
  /** The servers Docker's embedded resolver forwards names it does not know to (default: the host's). */
  readonly dns?: string[];
}

export type ContainerRole = "computer" | "display";

/** The create request of one container of a computer. */
export function containerSpec(
  settings: ComputerContainerSettings,
  name: string,
  {
    published = [],
    mounts = [],
    env = [],
    cmd = ["sleep", "infinity"],
    home = settings.workspacePath,
    aliases,
    dns,
  }: ContainerExtras,
): Docker.ContainerCreateOptions {
  const { resources } = settings;
  return {
    name,
    Image: settings.image,
    Cmd: cmd,
    User: settings.user,
    WorkingDir: settings.workspacePath,
    // The screen gateway takes connections from the host's end of the
    // computer's network only, never from another computer on it.
    Env: [`HOME=${home}`, "LANG=C.UTF-8", "AGENT_COMPUTER_GATEWAY_SOURCES=default-gateway", ...env],
    Labels: settings.labels,
    ExposedPorts: Object.fromEntries(published.map((p) => [`${p}/tcp`, {}])),
    ...(aliases ? { NetworkingConfig: { EndpointsConfig: { [settings.network]: { Aliases: aliases } } } } : {}),
    HostConfig: {
      ...(dns ? { Dns: dns } : {}),
      Mounts: [{ Type: "bind", Source: settings.homeDir, Target: settings.workspacePath }, ...mounts],
      NetworkMode: settings.network,
      PortBindings: Object.fromEntries(published.map((p) => [`${p}/tcp`, [{ HostIp: "127.0.0.1", HostPort: "" }]])),
      Privileged: false,
      // A real init reaps the orphans that commands leave behind.
      Init: true,
      ShmSize: settings.shmBytes,
      SecurityOpt: [`seccomp=${settings.seccomp}`, "no-new-privileges:true"],
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
  };
}

const containerNoun = (role: ContainerRole) => (role === "display" ? "display container" : "container");

/** Creates one container of a computer (not started). */
export async function createContainer(
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
export async function startContainer(
  container: Docker.Container,
  role: ContainerRole,
  signal: AbortSignal,
): Promise<void> {
  try {
    await container.start({ abortSignal: signal });
  } catch (error) {
    await container.remove({ force: true }).catch(() => {});
    throw engineFailure(error, `start the computer's ${containerNoun(role)}`);
  }
}
