import { randomUUID } from "node:crypto";
import type { Json } from "./fixture-json.js";

// Scheduling in the wire fixture (kubernetes-wire-fixture.ts), on its one
// node: a claim must exist, and a required podAffinity term must match a
// running pod.

/** Why the scheduler could not place the pod (one node), or undefined when it can. */
export function unschedulableReason(
  claims: ReadonlyMap<string, string>,
  pods: ReadonlyMap<string, { pod: Json; deleting?: boolean }>,
  namespace: string,
  spec: Json,
): string | undefined {
  for (const volume of spec.volumes ?? []) {
    const claim = volume.persistentVolumeClaim?.claimName as string | undefined;
    if (claim && !claims.has(`${namespace}/${claim}`))
      return `0/1 nodes are available: persistentvolumeclaim "${claim}" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`;
  }
  const terms = (spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as Json[];
  const running = [...pods.entries()].filter(
    ([, r]) => r.pod.status?.phase === "Running" && !r.deleting && !r.pod.metadata?.deletionTimestamp,
  );
  for (const term of terms) {
    const wanted = (term.labelSelector?.matchLabels ?? {}) as Record<string, string>;
    const namespaces = (term.namespaces as string[] | undefined) ?? [namespace];
    const met = running.some(
      ([k, r]) =>
        namespaces.includes(k.split("/")[0] as string) &&
        Object.entries(wanted).every(([label, value]) => r.pod.metadata?.labels?.[label] === value),
    );
    if (!met)
      return "0/1 nodes are available: 1 node(s) didn't match pod affinity rules. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
  }
  return undefined;
}

/** A running pod that is not a computer (no container behind it): one that holds a volume, which affinity rules see. */
export function foreignPod(namespace: string, name: string, labels: Record<string, string>, resourceVersion: string) {
  const now = new Date().toISOString();
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels, uid: randomUUID(), resourceVersion, creationTimestamp: now },
    spec: { containers: [{ name: "app", image: "foreign" }], nodeName: "fixture-node" },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }] },
  } as Json;
}
