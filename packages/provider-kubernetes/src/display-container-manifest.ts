import { dirname } from "node:path";
import { AgentComputerError } from "@agent-computer/core";
import {
  CHROMIUM_MANAGED_POLICY_FILE,
  DEVTOOLS_TRANSPORT_ENV,
  DISPLAY_APART_CHROMIUM_POLICY,
  DISPLAY_HOME,
  DISPLAY_HOME_BYTES,
  DISPLAY_HOME_ENV,
  TERMINAL_HOST_ENV,
  TERMINAL_HOST_PORT,
  X_ACCESS_ENV,
} from "@agent-computer/desktop-runtime";
import type { V1Container, V1Volume, V1VolumeMount } from "@kubernetes/client-node";

// The pod's display container (`displayContainer: true`, README
// "Takeover"; docs/architecture.md §4): the display stack in a second
// container of the pod, from the same image, sharing the home volume and
// nothing of the bot's file system. The pod's containers share one loopback
// and one IPC namespace, so what listens there is closed where it starts
// (DevTools on a pipe, X on its Unix socket only, x11vnc behind the
// gateway's password: computer/desktop in desktop-runtime).

/** The display container's name in every computer pod that has one. */
export const DISPLAY_CONTAINER_NAME = "display";

const POLICY_VOLUME = "display-policy";
const DISPLAY_HOME_VOLUME = "display-home";
const DISPLAY_SHM_VOLUME = "display-shm";
/** The volume that holds a copied-in home where both containers see it (its parent folder, see homeVolumeOf). */
export const COPIED_HOME_VOLUME = "homes";

/**
 * The display container's command: writes the display's Chromium policy
 * where Chromium reads managed policies (a memory volume only this
 * container mounts, so nothing of the bot's reaches it), then waits, as
 * pid 1, reaping what the display's programs leave behind (the pod shares
 * no process namespace, so no pause container reaps them): `wait` with a
 * job running blocks in waitpid for any child, orphans included.
 */
const DISPLAY_START = `printf '%s' "$1" > "$2" && sleep infinity & while :; do wait; sleep 1; done`;

/**
 * The bot's container's command when the display is apart: the terminal
 * host's state folder made first (0700, as the `desktop` CLI makes it), so
 * it is there before the pod is ready and a home snapshot never sees it
 * appear later (kubernetes-hostile-archives.test.ts caught that race), its
 * home made (an image whose user home lacks it still starts), the terminal host on
 * the pod's loopback (a person's terminals run beside the bot's processes,
 * issue 46), restarted if it stops, and pid 1 reaping orphans as above.
 */
export const COMPUTER_START_BESIDE_DISPLAY = `(umask 077 && mkdir -p /tmp/agent-computer-desktops) && mkdir -p -- "$1" || exit 1
while :; do desktop terminal-host >/dev/null 2>&1; sleep 1; done &
while :; do wait; sleep 1; done`;

/**
 * Where a copied-in home lives when two containers must see it: an
 * emptyDir at the home's parent folder, so the import's staging folder
 * (beside the home) is on the same file system and its swap is a rename.
 */
export function homeVolumeOf(workspacePath: string): { volume: V1Volume; mount: V1VolumeMount } {
  const parent = dirname(workspacePath);
  if (parent === "/") {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `A display container needs the home (${workspacePath}) one folder below a parent it can share with the computer's container; set workspacePath deeper (such as /home/computer), or displayContainer: false.`,
    );
  }
  return { volume: { name: COPIED_HOME_VOLUME, emptyDir: {} }, mount: { name: COPIED_HOME_VOLUME, mountPath: parent } };
}

/** The display container of a computer pod and the volumes only it mounts. */
export function displayContainerOf(input: {
  readonly image: string;
  readonly shmSizeLimit: string;
  readonly limits: Record<string, string>;
  /** The home's mount, the same as the bot's container's. */
  readonly homeMount: V1VolumeMount;
  readonly securityContext: V1Container["securityContext"];
  /** A fenced computer's: the proxy variables, and what its Chromium policy adds (egress-fence-manifest.ts). */
  readonly env?: V1Container["env"];
  readonly chromiumPolicy?: Record<string, unknown>;
  /** A fenced computer's with credentials: its CA, mounted as in the bot's container. */
  readonly extraMounts?: V1VolumeMount[];
}): { container: V1Container; volumes: V1Volume[] } {
  const policyFile = CHROMIUM_MANAGED_POLICY_FILE;
  const container: V1Container = {
    name: DISPLAY_CONTAINER_NAME,
    image: input.image,
    imagePullPolicy: "IfNotPresent",
    command: [
      "/bin/sh",
      "-c",
      DISPLAY_START,
      "start-display",
      JSON.stringify({ ...DISPLAY_APART_CHROMIUM_POLICY, ...input.chromiumPolicy }),
      policyFile,
    ],
    workingDir: "/",
    env: [
      { name: "HOME", value: DISPLAY_HOME },
      { name: "LANG", value: "C.UTF-8" },
      ...Object.entries(DISPLAY_HOME_ENV).map(([name, value]) => ({ name, value })),
      // A person's terminals open on the bot's container's terminal host, over the pod's loopback.
      { name: TERMINAL_HOST_ENV, value: `127.0.0.1:${TERMINAL_HOST_PORT}` },
      // DevTools on a Unix socket of this container's own, never on the loopback the bot shares.
      { name: DEVTOOLS_TRANSPORT_ENV, value: "pipe" },
      // X behind a cookie of this container's own, its abstract socket held by Xvfb: the network
      // namespace is the bot's too, and a bot that held that name first would be taken for the display.
      { name: X_ACCESS_ENV, value: "cookie" },
      ...(input.env ?? []),
    ],
    ...(Object.keys(input.limits).length > 0 ? { resources: { limits: input.limits } } : {}),
    securityContext: input.securityContext,
    readinessProbe: { exec: { command: ["test", "-s", policyFile] }, periodSeconds: 1, failureThreshold: 1 },
    volumeMounts: [
      // Its own /dev/shm: Chromium's shared memory holds what its pages show.
      { name: DISPLAY_SHM_VOLUME, mountPath: "/dev/shm" },
      { name: DISPLAY_HOME_VOLUME, mountPath: DISPLAY_HOME },
      { name: POLICY_VOLUME, mountPath: dirname(policyFile) },
      input.homeMount,
      ...(input.extraMounts ?? []),
    ],
  };
  const volumes: V1Volume[] = [
    { name: DISPLAY_SHM_VOLUME, emptyDir: { medium: "Memory", sizeLimit: input.shmSizeLimit } },
    { name: DISPLAY_HOME_VOLUME, emptyDir: { medium: "Memory", sizeLimit: `${DISPLAY_HOME_BYTES / 2 ** 20}Mi` } },
    { name: POLICY_VOLUME, emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
  ];
  return { container, volumes };
}
