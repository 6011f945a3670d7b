import { chmodSync, chownSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type Docker from "dockerode";
import type { Json } from "./fixture-json.js";

// How the wire fixture (kubernetes-wire-fixture.ts) makes a pod's
// containers, the way a kubelet does on one node: every container of the
// pod from its own image with its own securityContext, command, limits and
// mounts; the first holds the pod's namespaces (the kubelet's pause
// container) and every later one joins its network namespace (one
// loopback, one port space) and its IPC namespace: Kubernetes' Pods page
// (kubernetes.io/docs/concepts/workloads/pods, resource sharing and
// communication) has a pod's containers share an IP address and port space
// and talk over SystemV IPC and POSIX shared memory. Filesystems are each container's
// own, and so is the pid namespace unless `shareProcessNamespace`.

/** The label the fixture puts on every engine container it makes, with its own id. */
export const FIXTURE_LABEL = "org.agent-computer.kubernetes-fixture";

/** One container of a pod to make on the engine. */
export interface PodContainerPlan {
  readonly fixtureId: string;
  readonly namespace: string;
  readonly pod: string;
  readonly spec: Json;
  readonly container: Json;
  /** Engine binds of its claim volumes (`source:mountPath[:ro]`). */
  readonly binds: string[];
  /** The engine id of the pod's first container, for every later one (its namespaces are joined). */
  readonly first?: string;
  /** Whether the pod has containers after this one (the first then lets them join its IPC namespace). */
  readonly shared: boolean;
}

/** The engine container for one container of a pod (created, not started). */
export function createPodContainer(docker: Docker, plan: PodContainerPlan): Promise<Docker.Container> {
  const { spec, container, first } = plan;
  const security = { ...spec.securityContext, ...container.securityContext } as Json;
  const limits = (container.resources?.limits ?? {}) as Json;
  const memoryVolumes = memoryEmptyDirs(spec, container);
  const shm = memoryVolumes.find((v) => v.mountPath === "/dev/shm");
  const sharedPids = spec.shareProcessNamespace === true;
  const suffix = first === undefined ? "" : `-${container.name}`;
  return docker.createContainer({
    name: `k8s-fixture-${plan.fixtureId}-${plan.namespace}-${plan.pod}${suffix}`.slice(0, 120),
    Image: container.image,
    Entrypoint: container.command,
    Cmd: container.args ?? [],
    WorkingDir: container.workingDir,
    User:
      security.runAsUser === undefined
        ? undefined
        : `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}`,
    Env: (container.env ?? []).map((e: Json) => `${e.name}=${e.value ?? ""}`),
    Labels: {
      [FIXTURE_LABEL]: plan.fixtureId,
      "io.kubernetes.pod.namespace": plan.namespace,
      "io.kubernetes.pod.name": plan.pod,
      "io.kubernetes.container.name": container.name,
    },
    HostConfig: {
      // The first container stands for the pause container: an init that reaps orphans when the pod shares pids.
      Init: first === undefined && sharedPids,
      ...(first === undefined
        ? { IpcMode: plan.shared ? "shareable" : undefined }
        : {
            NetworkMode: `container:${first}`,
            IpcMode: `container:${first}`,
            PidMode: sharedPids ? `container:${first}` : undefined,
          }),
      // The first container's /dev/shm is its IPC namespace's; a joiner gets its own memory volume there.
      ShmSize: first === undefined && shm ? shm.bytes : undefined,
      Tmpfs: Object.fromEntries(
        memoryVolumes
          .filter((v) => first !== undefined || v.mountPath !== "/dev/shm")
          .map((v) => [v.mountPath, `${v.bytes ? `size=${v.bytes},` : ""}mode=1777`]),
      ),
      NanoCpus: limits.cpu ? Math.round(cpuCores(limits.cpu) * 1e9) : undefined,
      Memory: limits.memory ? quantityBytes(limits.memory) : undefined,
      CapDrop: security.capabilities?.drop?.includes("ALL") ? ["ALL"] : undefined,
      CapAdd: security.capabilities?.add,
      SecurityOpt: [
        ...(security.allowPrivilegeEscalation === false ? ["no-new-privileges:true"] : []),
        // A node that installed desktop-runtime's profile as a Localhost profile.
        ...(security.seccompProfile?.type === "Localhost" ? [`seccomp=${computerSeccompProfile()}`] : []),
      ],
      Privileged: security.privileged === true,
      // io.k8s.api.core.v1.PodSecurityContext `fsGroup`: "A special supplemental group that applies to all containers in a pod."
      GroupAdd: spec.securityContext?.fsGroup === undefined ? undefined : [String(spec.securityContext.fsGroup)],
      ReadonlyRootfs: security.readOnlyRootFilesystem === true,
      Binds: plan.binds,
    },
  });
}

/**
 * The memory-backed emptyDir volumes `container` mounts, each a tmpfs of
 * its own on the engine (an emptyDir two containers mount is not shared
 * here: the computer's pod mounts each in one container).
 */
function memoryEmptyDirs(spec: Json, container: Json): { mountPath: string; bytes?: number }[] {
  const out: { mountPath: string; bytes?: number }[] = [];
  for (const mount of (container.volumeMounts ?? []) as Json[]) {
    const volume = ((spec.volumes ?? []) as Json[]).find((v) => v.name === mount.name);
    if (volume?.emptyDir?.medium !== "Memory") continue;
    const limit = volume.emptyDir.sizeLimit as string | undefined;
    out.push({ mountPath: mount.mountPath, ...(limit ? { bytes: quantityBytes(limit) } : {}) });
  }
  return out;
}

/**
 * The container an exec runs in, as the API server picks it: the one
 * named by `container=`, else the only one. The API reference of
 * `connect GET /api/v1/namespaces/{namespace}/pods/{name}/exec` says of
 * `container`: "Container in which to execute the command. Defaults to
 * only container if there is only one container in the pod." A pod of
 * several answers 400 without it, and for a name it does not have.
 */
export function execContainerIndex(spec: Json, pod: string, wanted: string | null): number | string {
  const names = ((spec.containers ?? []) as Json[]).map((c) => c.name as string);
  if (!wanted) {
    return names.length === 1
      ? 0
      : `a container name must be specified for pod ${pod}, choose one of: [${names.join(" ")}]`;
  }
  const index = names.indexOf(wanted);
  return index >= 0 ? index : `container ${wanted} is not valid for pod ${pod}`;
}

/**
 * Engine binds for the pod's volumes on a node's disk: a claim's host
 * folder (or its subPath, made on first use), an emptyDir not in
 * memory as a folder of `podDir` (one per pod, as the kubelet keeps under
 * its pods folder: every container that mounts it sees the same files),
 * and a secret volume's folder there (fixture-secrets.ts wrote it),
 * always read-only as the kubelet mounts it.
 */
export function volumeBinds(
  claims: ReadonlyMap<string, string>,
  podDir: string,
  namespace: string,
  spec: Json,
  container: Json,
): string[] {
  const binds: string[] = [];
  const group = spec.securityContext?.fsGroup as number | undefined;
  for (const mount of (container.volumeMounts ?? []) as Json[]) {
    const volume = ((spec.volumes ?? []) as Json[]).find((v) => v.name === mount.name);
    const claim = volume?.persistentVolumeClaim?.claimName as string | undefined;
    if (volume?.secret !== undefined) {
      binds.push(`${join(podDir, mount.name)}:${mount.mountPath}:ro`);
      continue;
    }
    const onDisk = volume?.emptyDir !== undefined && volume.emptyDir.medium !== "Memory";
    if (!claim && !onDisk) continue;
    const root = claim ? (claims.get(`${namespace}/${claim}`) as string) : join(podDir, mount.name);
    const subPath = (mount.subPath as string | undefined) ?? "";
    if (subPath.split("/").includes("..") || subPath.startsWith("/")) throw new Error(`bad subPath ${subPath}`);
    const source = subPath ? join(root, subPath) : root;
    if (!existsSync(source)) {
      mkdirSync(source, { recursive: true, mode: 0o2775 });
      // An emptyDir is world-writable, as the kubelet makes it.
      if (onDisk) chmodSync(source, 0o2777);
      if (group !== undefined) chownSync(source, claim ? (spec.securityContext?.runAsUser ?? 0) : 0, group);
    }
    binds.push(`${source}:${mount.mountPath}${mount.readOnly ? ":ro" : ""}`);
  }
  return binds;
}

const UNITS: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** A memory quantity ("512Mi", "4Gi", "1G") in bytes. */
export function quantityBytes(quantity: string): number {
  const match = /^([0-9.]+)([A-Za-z]*)$/.exec(quantity);
  if (!match) throw new Error(`bad quantity ${quantity}`);
  return Math.round(Number(match[1]) * (UNITS[match[2] as string] ?? 1));
}

/** A CPU quantity ("2", "500m") in cores. */
export function cpuCores(quantity: string): number {
  return quantity.endsWith("m") ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}

/** Runs `cmd` in a container and gives its exit code (null when it could not run): a readiness probe. */
export async function execExitCode(docker: Docker, containerId: string, cmd: string[]): Promise<number | null> {
  try {
    const exec = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    await new Promise<void>((resolve) => {
      stream.on("data", () => {});
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", () => resolve());
    });
    return (await exec.inspect()).ExitCode ?? null;
  } catch {
    return null;
  }
}
