import type { Json } from "./fixture-json.js";

// What the wire fixture (kubernetes-wire-fixture.ts) refuses of a pod spec,
// as kube-apiserver's validation does, for the fields it honours beyond a
// container's basics. Each rule is from the API's published definitions
// (the OpenAPI schema kube-apiserver serves at /openapi/v2 and documents
// in its API reference):
// - io.k8s.api.core.v1.PodSpec `initContainers`: run in order before the
//   containers, each to completion; a name must be unique among all the
//   pod's containers, init or not; an init container may have no
//   lifecycle, readiness, liveness or startup probe (this emulation takes
//   no `restartPolicy: Always` sidecars, which may).
// - io.k8s.api.core.v1.Container `name`: a DNS label (RFC 1123), at most
//   63 characters.
// - io.k8s.api.core.v1.Capabilities `add` and `drop`: lists of capability
//   names (strings).
// - io.k8s.api.core.v1.SecurityContext `readOnlyRootFilesystem`,
//   `runAsNonRoot`, `runAsUser`: booleans and an integer (int64).
// - io.k8s.api.core.v1.Volume `name`: a DNS label, unique in the pod, and
//   one source only; io.k8s.api.core.v1.SecretVolumeSource `secretName`
//   (required), `defaultMode`, and io.k8s.api.core.v1.KeyToPath `key`,
//   `path` ("May not be an absolute path. May not contain the path element
//   '..'. May not start with the string '..'") and `mode` ("must be an
//   octal value between 0000 and 0777 or a decimal value between 0 and 511").
// - io.k8s.api.core.v1.VolumeMount `name` ("This must match the Name of a
//   Volume") and `mountPath`, unique within a container.
// What the kubelet refuses at a container's start rather than the API at
// create (SecurityContext `runAsNonRoot` with uid 0) is in
// `nonRootViolation`, which the fixture reports as the kubelet does: the
// container waits with reason CreateContainerConfigError.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PROBES = ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] as const;

/** The first field kube-apiserver would refuse in `spec`, as `<path>: <reason>`, or undefined. */
export function podSpecProblem(spec: Json): string | undefined {
  const volumes = volumesProblem((spec.volumes ?? []) as Json[]);
  if (volumes) return volumes;
  const volumeNames = new Set(((spec.volumes ?? []) as Json[]).map((v) => v.name as string));
  const seen = new Set<string>();
  const lists: [string, Json[]][] = [
    ["spec.initContainers", (spec.initContainers ?? []) as Json[]],
    ["spec.containers", (spec.containers ?? []) as Json[]],
  ];
  for (const [path, containers] of lists) {
    for (const [i, container] of containers.entries()) {
      const at = `${path}[${i}]`;
      const name = container.name;
      if (typeof name !== "string" || name.length > 63 || !DNS_LABEL.test(name))
        return `${at}.name: Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 label`;
      if (seen.has(name)) return `${at}.name: Duplicate value: ${JSON.stringify(name)}`;
      seen.add(name);
      if (path === "spec.initContainers") {
        const probe = PROBES.find((field) => container[field] !== undefined);
        if (probe) return `${at}.${probe}: Forbidden: may not be set for init containers`;
      }
      const security = (container.securityContext ?? {}) as Json;
      for (const list of ["add", "drop"] as const) {
        const names = security.capabilities?.[list];
        if (names !== undefined && (!Array.isArray(names) || names.some((n) => typeof n !== "string")))
          return `${at}.securityContext.capabilities.${list}: Invalid value: a list of capability names`;
      }
      for (const flag of ["readOnlyRootFilesystem", "runAsNonRoot", "privileged", "allowPrivilegeEscalation"]) {
        if (security[flag] !== undefined && typeof security[flag] !== "boolean")
          return `${at}.securityContext.${flag}: Invalid value: a boolean`;
      }
      if (security.runAsUser !== undefined && !(Number.isInteger(security.runAsUser) && security.runAsUser >= 0))
        return `${at}.securityContext.runAsUser: Invalid value: ${security.runAsUser}: must be between 0 and 2147483647, inclusive`;
      const mountPaths = new Set<string>();
      for (const [j, mount] of ((container.volumeMounts ?? []) as Json[]).entries()) {
        if (!volumeNames.has(mount.name))
          return `${at}.volumeMounts[${j}].name: Not found: ${JSON.stringify(mount.name)}`;
        if (typeof mount.mountPath !== "string" || mount.mountPath === "")
          return `${at}.volumeMounts[${j}].mountPath: Required value`;
        if (mountPaths.has(mount.mountPath))
          return `${at}.volumeMounts[${j}].mountPath: Invalid value: ${JSON.stringify(mount.mountPath)}: must be unique`;
        mountPaths.add(mount.mountPath);
      }
    }
  }
  return undefined;
}

const SOURCES = ["emptyDir", "persistentVolumeClaim", "secret", "configMap", "projected", "hostPath"] as const;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What kube-apiserver refuses of the pod's volumes (names, one source each, secret volumes' fields). */
function volumesProblem(volumes: Json[]): string | undefined {
  const names = new Set<string>();
  const modeProblem = (at: string, mode: unknown) =>
    mode !== undefined && !(Number.isInteger(mode) && (mode as number) >= 0 && (mode as number) <= 0o777)
      ? `${at}: Invalid value: ${JSON.stringify(mode)}: must be a number between 0 and 0777 (octal), both inclusive`
      : undefined;
  for (const [i, volume] of volumes.entries()) {
    const at = `spec.volumes[${i}]`;
    if (typeof volume.name !== "string" || volume.name.length > 63 || !DNS_LABEL.test(volume.name))
      return `${at}.name: Invalid value: ${JSON.stringify(volume.name)}: a lowercase RFC 1123 label`;
    if (names.has(volume.name)) return `${at}.name: Duplicate value: ${JSON.stringify(volume.name)}`;
    names.add(volume.name);
    const sources = SOURCES.filter((source) => volume[source] !== undefined);
    if (sources.length > 1) return `${at}.${sources[1]}: Forbidden: may not specify more than 1 volume type`;
    const secret = volume.secret as Json | undefined;
    if (!secret) continue;
    if (typeof secret.secretName !== "string" || secret.secretName === "")
      return `${at}.secret.secretName: Required value`;
    if (secret.secretName.length > 253 || !DNS_SUBDOMAIN.test(secret.secretName))
      return `${at}.secret.secretName: Invalid value: ${JSON.stringify(secret.secretName)}: a lowercase RFC 1123 subdomain`;
    const defaultMode = modeProblem(`${at}.secret.defaultMode`, secret.defaultMode);
    if (defaultMode) return defaultMode;
    for (const [j, item] of ((secret.items ?? []) as Json[]).entries()) {
      const itemAt = `${at}.secret.items[${j}]`;
      if (typeof item.key !== "string" || item.key === "") return `${itemAt}.key: Required value`;
      const path = item.path;
      if (typeof path !== "string" || path === "") return `${itemAt}.path: Required value`;
      if (path.startsWith("/"))
        return `${itemAt}.path: Invalid value: ${JSON.stringify(path)}: must be a relative path`;
      if (path.split("/").includes(".."))
        return `${itemAt}.path: Invalid value: ${JSON.stringify(path)}: must not contain '..'`;
      if (path.startsWith(".."))
        return `${itemAt}.path: Invalid value: ${JSON.stringify(path)}: must not start with '..'`;
      const mode = modeProblem(`${itemAt}.mode`, item.mode);
      if (mode) return mode;
    }
  }
  return undefined;
}

/**
 * Why the kubelet would not start `container` (its securityContext over
 * the pod's): `runAsNonRoot` with uid 0 set. Undefined when it starts.
 */
export function nonRootViolation(pod: string, spec: Json, container: Json): string | undefined {
  const security = { ...spec.securityContext, ...container.securityContext } as Json;
  if (security.runAsNonRoot === true && security.runAsUser === 0)
    return `container's runAsUser breaks non-root policy (pod: "${pod}", container: ${container.name})`;
  return undefined;
}
