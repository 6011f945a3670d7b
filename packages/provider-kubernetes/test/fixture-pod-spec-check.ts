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
// What the kubelet refuses at a container's start rather than the API at
// create (SecurityContext `runAsNonRoot` with uid 0) is in
// `nonRootViolation`, which the fixture reports as the kubelet does: the
// container waits with reason CreateContainerConfigError.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PROBES = ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] as const;

/** The first field kube-apiserver would refuse in `spec`, as `<path>: <reason>`, or undefined. */
export function podSpecProblem(spec: Json): string | undefined {
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
