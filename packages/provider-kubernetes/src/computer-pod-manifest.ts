import { labelValueOf, type ResolvedComputerSpec } from "@agent-computer/core";
import type { V1Container, V1Pod, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import { COMPUTER_APP_NAME, COMPUTER_POD_LABELS } from "./computer-pod-labels.js";
import { COMPUTER_START_BESIDE_DISPLAY, displayContainerOf, homeVolumeOf } from "./display-container-manifest.js";
import { EGRESS_POLICY_ANNOTATION, type EgressFence } from "./egress-fence-manifest.js";
import type { ResolvedKubernetesProviderOptions } from "./kubernetes-provider-options.js";

/** The uid and gid the computer image's user has; every pod runs as them. */
export const COMPUTER_UID = 1000;
export const COMPUTER_GID = 1000;

// The home folder is made by the pod itself, so an image whose user home
// lacks it still starts; then the container only waits.
const START = `mkdir -p -- "$1" && exec sleep infinity`;

/** The pod volume that holds the mounted home (a claim's `homes/<home key>`). */
export const HOME_VOLUME = "home";

/** Where a pod's home comes from when it is mounted: the claim and the pods that hold its volume. */
export interface MountedHomeSource {
  claim: string;
  colocateNamespace: string;
  colocateLabels: Record<string, string>;
}

/**
 * The pod for one computer (docs/architecture.md §9): the computer image running as uid
 * 1000, no service account token (a computer never holds the API's
 * credentials), no service links (no other services' addresses in its
 * environment), no privilege escalation, all capabilities dropped, the
 * runtime's default seccomp profile, a memory-backed /dev/shm for Chromium.
 * With `displayContainer` (the default) the display stack runs in a second
 * container (display-container-manifest.ts) that shares only the home, and
 * no process namespace is shared (each container's pid 1 reaps its own
 * orphans); without it one container holds both, in a shared process
 * namespace so the pause container reaps the orphans commands leave behind
 * (as Docker's init does for provider-docker).
 */
export function computerPodManifest(
  name: string,
  spec: ResolvedComputerSpec,
  image: string,
  options: ResolvedKubernetesProviderOptions,
  /** Set when the home is mounted from a claim instead of copied in. */
  mountedHome?: MountedHomeSource,
  /** Set when the spec carries an egress policy (egress-fence-manifest.ts). */
  fence?: EgressFence,
): V1Pod {
  const cpu = spec.resources?.cpus === undefined ? options.cpuLimit : `${Math.round(spec.resources.cpus * 1000)}m`;
  const memory = spec.resources?.memoryMb === undefined ? options.memoryLimit : `${spec.resources.memoryMb}Mi`;
  const limits: Record<string, string> = {};
  if (cpu !== undefined) limits.cpu = cpu;
  if (memory !== undefined) limits.memory = memory;
  const screenLimit = spec.screenLimit;
  const apart = options.displayContainer;
  const securityContext: V1Container["securityContext"] = {
    allowPrivilegeEscalation: false,
    privileged: false,
    // Chromium's sandbox chroots inside its own user namespace, which
    // the bounding set must still allow; nothing else is kept.
    capabilities: { drop: ["ALL"], add: ["SYS_CHROOT"] },
  };
  // The home: a claim's folder when mounted; else, with a display container, a volume both see.
  const shared = apart && !mountedHome ? homeVolumeOf(options.workspacePath) : undefined;
  const homeMount: V1VolumeMount | undefined = mountedHome
    ? { name: HOME_VOLUME, mountPath: options.workspacePath, subPath: `homes/${spec.homeKey}` }
    : shared?.mount;
  const display =
    apart && homeMount
      ? displayContainerOf({
          image,
          shmSizeLimit: options.shmSizeLimit,
          limits,
          homeMount,
          securityContext,
          ...(fence ? { env: fence.env, chromiumPolicy: fence.chromiumPolicy, extraMounts: fence.computerMounts } : {}),
        })
      : undefined;
  const volumes: V1Volume[] = [
    { name: "shm", emptyDir: { medium: "Memory", sizeLimit: options.shmSizeLimit } },
    ...(mountedHome ? [{ name: HOME_VOLUME, persistentVolumeClaim: { claimName: mountedHome.claim } }] : []),
    ...(shared ? [shared.volume] : []),
    ...(display?.volumes ?? []),
    ...(fence?.volumes ?? []),
  ];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: options.namespace,
      labels: {
        ...options.podLabels,
        ...spec.labels,
        [COMPUTER_POD_LABELS.name]: COMPUTER_APP_NAME,
        [COMPUTER_POD_LABELS.managedBy]: COMPUTER_APP_NAME,
        [COMPUTER_POD_LABELS.managed]: "true",
        [COMPUTER_POD_LABELS.computerId]: labelValueOf(spec.computerId),
        [COMPUTER_POD_LABELS.homeKey]: labelValueOf(spec.homeKey),
      },
      annotations: {
        ...options.podAnnotations,
        [COMPUTER_POD_LABELS.computerId]: spec.computerId,
        [COMPUTER_POD_LABELS.homeKey]: spec.homeKey,
        [COMPUTER_POD_LABELS.workspacePath]: options.workspacePath,
        [COMPUTER_POD_LABELS.screenLimit]: String(screenLimit),
        ...(fence ? { [EGRESS_POLICY_ANNOTATION]: fence.policyName } : {}),
      },
    },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // Apart, the display's processes must be out of the bot's sight and reach (no /proc, no signals, no ptrace).
      shareProcessNamespace: !apart,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: options.terminationGracePeriodSeconds,
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
      // A ReadWriteOnce volume is attached to one node: the pod must run where the claim's holders run.
      ...(mountedHome
        ? {
            affinity: {
              podAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  {
                    labelSelector: { matchLabels: mountedHome.colocateLabels },
                    namespaces: [mountedHome.colocateNamespace],
                    topologyKey: "kubernetes.io/hostname",
                  },
                ],
              },
            },
          }
        : {}),
      securityContext: {
        runAsUser: COMPUTER_UID,
        runAsGroup: COMPUTER_GID,
        runAsNonRoot: true,
        fsGroup: COMPUTER_GID,
        seccompProfile: options.seccompLocalhostProfile
          ? { type: "Localhost", localhostProfile: options.seccompLocalhostProfile }
          : { type: "RuntimeDefault" },
      },
      // The fence's rules are in the pod's network namespace before any other container of it starts.
      ...(fence ? { initContainers: [fence.initContainer] } : {}),
      containers: [
        {
          name: options.containerName,
          image,
          imagePullPolicy: "IfNotPresent",
          command: [
            "/bin/sh",
            "-c",
            apart ? COMPUTER_START_BESIDE_DISPLAY : START,
            "start-computer",
            options.workspacePath,
          ],
          workingDir: "/",
          env: [
            { name: "HOME", value: options.workspacePath },
            { name: "LANG", value: "C.UTF-8" },
            ...(fence?.env ?? []),
          ],
          ...(Object.keys(limits).length > 0 ? { resources: { limits } } : {}),
          securityContext,
          readinessProbe: {
            exec: { command: ["test", "-d", options.workspacePath] },
            periodSeconds: 1,
            failureThreshold: 1,
          },
          volumeMounts: [
            { name: "shm", mountPath: "/dev/shm" },
            ...(homeMount ? [homeMount] : []),
            ...(fence?.computerMounts ?? []),
          ],
        },
        ...(display ? [display.container] : []),
        ...(fence ? [fence.container] : []),
      ],
      volumes,
    },
  } as V1Pod;
}
