import { setTimeout as delay } from "node:timers/promises";
import {
  CHROMIUM_MANAGED_POLICY_FILE,
  DISPLAY_HOME,
  DISPLAY_HOME_BYTES,
  DISPLAY_HOME_ENV,
  LOOPBACK_PROXY_ENV,
  LOOPBACK_PROXY_PORT,
  SCREEN_GATEWAY_PORT,
  TERMINAL_HOST_ENV,
  TERMINAL_HOST_PORT,
} from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import { COMPUTER_LABELS, DISPLAY_LABELS } from "./computer-labels.js";
import { type ComputerContainerSettings, containerSpec, createContainer } from "./container-spec.js";
import { COMPUTER_ALIAS, ensurePairNetwork, joinPairNetwork } from "./display-network.js";
import { EGRESS_LABELS } from "./egress-labels.js";
import { engineFailure, engineStatus } from "./engine-failure.js";

// A computer's display container (`displayContainer: true`) starts on the
// first desktop call, not at provision: a computer that only runs shells
// never has one (README, "The display in its own container"). Provision
// only names it, and its pair network, in the computer's labels; this file
// makes both from the computer's own container, the same way whichever
// process gets there first.

/** What starting a display container needs from its provider. */
export interface DisplayStartHost {
  readonly docker: Docker;
  /** `displayNetworkPool`: where the pair network takes its /29. */
  readonly networkPool: string;
  /**
   * Writes the display's Chromium policy on the engine's host and gives its path (mounted read-only);
   * `fenced`: its computer has an egress policy, so the browser sends every URL to the egress proxy.
   */
  policyFile(fenced: boolean): Promise<string>;
  /** The provider's bridge: a fenced computer's display joins it (for its gateway's port) besides the pair network. */
  bridgeNetwork(): Promise<string>;
  /** The seccomp profile as JSON text. */
  seccomp(): string;
}

/** A computer's display container and the network it shares with the computer, by the names its labels give. */
export interface DisplayPlan {
  readonly container: string;
  readonly network: string;
}

/** How long a display another caller has created may take to start before it counts as abandoned. */
const CLAIM_WAIT_MS = 60_000;

/**
 * Makes the display container of the running computer `computer` (its
 * inspect) and its pair network, joins both containers to it, and starts
 * the display. The container's name is the claim: of callers at once (two
 * bots' first desktop calls, or two workers holding the computer), the one
 * whose create succeeds makes the network and starts the display, and the
 * others wait for it to run, so there is one display and one network (the
 * engine's own duplicate check on network names is best effort: two
 * creates at once made two networks of one name). A claim that fails is
 * removed, so the next call tries afresh; one left "created" by a caller
 * that died is taken over after CLAIM_WAIT_MS.
 */
export async function startDisplayContainer(
  host: DisplayStartHost,
  computer: Docker.ContainerInspectInfo,
  plan: DisplayPlan,
  home: { readonly homeDir: string; readonly workspacePath: string },
  signal: AbortSignal,
): Promise<void> {
  const { docker } = host;
  const display = docker.getContainer(plan.container);
  let waitingSince: number | undefined;
  for (;;) {
    const status = await statusOf(display, signal);
    if (status === "running" || status === "paused") return;
    // It ran before (its computer was stopped, or it crashed): its networks are joined already.
    if (status === "exited") return startClaimed(display, signal, false);
    if (status !== "missing") {
      // "created" (another caller is making it), "restarting", "removing": wait for it to settle.
      waitingSince ??= Date.now();
      if (status === "created" && Date.now() - waitingSince > CLAIM_WAIT_MS) {
        await display.remove({ force: true }).catch(() => {});
        waitingSince = undefined;
      }
      await delay(100, undefined, { signal });
      continue;
    }
    // A fenced computer's own network is the pair network: its display takes the provider's bridge for the
    // gateway's port, and its browser reaches the web only through the egress proxy (README, "Egress by policy").
    const fenced = computer.Config.Labels?.[EGRESS_LABELS.policy] !== undefined;
    const settings = displaySettings(computer, home, host.seccomp());
    const network = fenced ? await host.bridgeNetwork() : settings.network;
    const spec = containerSpec({ ...settings, network }, plan.container, {
      published: [SCREEN_GATEWAY_PORT],
      mounts: [
        { Type: "bind", Source: await host.policyFile(fenced), Target: CHROMIUM_MANAGED_POLICY_FILE, ReadOnly: true },
        {
          Type: "tmpfs",
          Source: "",
          Target: DISPLAY_HOME,
          TmpfsOptions: { Mode: 0o1777, SizeBytes: DISPLAY_HOME_BYTES },
        },
      ],
      env: [
        `${LOOPBACK_PROXY_ENV}=socks5://${COMPUTER_ALIAS}:${LOOPBACK_PROXY_PORT}`,
        // A person's terminals run beside the bot's processes, on the computer's terminal host.
        `${TERMINAL_HOST_ENV}=${COMPUTER_ALIAS}:${TERMINAL_HOST_PORT}`,
        // Its programs' configuration from its own home, never the workspace the bot writes (issue 45, finding 1).
        ...Object.entries(DISPLAY_HOME_ENV).map(([name, value]) => `${name}=${value}`),
      ],
      home: DISPLAY_HOME,
      // Its browser resolves nothing itself (the proxy does): no name a page makes up leaves as a DNS query.
      ...(fenced ? { dns: ["127.0.0.1"] } : {}),
    });
    try {
      await createContainer(docker, signal, "display", spec);
    } catch (error) {
      // Another caller claimed it first: wait for that one.
      if (engineStatus((error as Error).cause) === 409) continue;
      throw error;
    }
    try {
      await ensurePairNetwork(docker, plan.network, host.networkPool, signal);
      await Promise.all([
        joinPairNetwork(docker, plan.network, computer.Id, [COMPUTER_ALIAS], signal),
        joinPairNetwork(docker, plan.network, plan.container, [], signal),
      ]);
    } catch (error) {
      await display.remove({ force: true }).catch(() => {});
      throw error;
    }
    return startClaimed(display, signal, true);
  }
}

/** Starts the display; one this caller made and that does not start is removed, so the next call makes it afresh. */
async function startClaimed(display: Docker.Container, signal: AbortSignal, made: boolean): Promise<void> {
  try {
    await display.start({ abortSignal: signal });
  } catch (error) {
    if (engineStatus(error) === 304) return; // started meanwhile
    if (made) await display.remove({ force: true }).catch(() => {});
    throw engineFailure(error, "start the computer's display container");
  }
}

type DisplayStatus = Docker.ContainerInspectInfo["State"]["Status"] | "missing";

async function statusOf(display: Docker.Container, signal: AbortSignal): Promise<DisplayStatus> {
  try {
    return (await display.inspect({ abortSignal: signal })).State.Status;
  } catch (error) {
    if (engineStatus(error) === 404) return "missing";
    throw engineFailure(error, "look up the computer's display container");
  }
}

/** Whether the display container exists and runs (a missing one is not an error: it was never started). */
export async function isRunning(display: Docker.Container, signal: AbortSignal): Promise<boolean> {
  return (await statusOf(display, signal)) === "running";
}

/**
 * The display's settings are its computer's (image, user, limits, network),
 * so they hold whoever starts it: the process that provisioned the
 * computer or one that reconnected to it later. Its labels are the
 * computer's but `managed` and the display's names, plus the computer's
 * id: `list` and `reconnect` never take it for a computer, and the orphan
 * sweep (display-containers.ts) finds it by that id.
 */
function displaySettings(
  computer: Docker.ContainerInspectInfo,
  home: { readonly homeDir: string; readonly workspacePath: string },
  seccomp: string,
): ComputerContainerSettings {
  const hostConfig = computer.HostConfig;
  const labels = { ...computer.Config.Labels };
  delete labels[COMPUTER_LABELS.managed];
  delete labels[DISPLAY_LABELS.displayContainer];
  delete labels[DISPLAY_LABELS.displayNetwork];
  return {
    image: computer.Image,
    user: computer.Config.User,
    workspacePath: home.workspacePath,
    homeDir: home.homeDir,
    network: hostConfig.NetworkMode ?? "default",
    resources: {
      cpus: (hostConfig.NanoCpus ?? 0) / 1e9,
      memoryMb: (hostConfig.Memory ?? 0) / 2 ** 20,
      pidsLimit: hostConfig.PidsLimit ?? 0,
    },
    shmBytes: hostConfig.ShmSize ?? 0,
    seccomp,
    labels: { ...labels, [DISPLAY_LABELS.displayOf]: computer.Id },
  };
}
