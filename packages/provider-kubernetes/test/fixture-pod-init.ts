import type Docker from "dockerode";
import type { Json } from "./fixture-json.js";
import { createPodContainer, FIXTURE_LABEL, type PodContainerPlan } from "./fixture-pod-containers.js";
import { nonRootViolation } from "./fixture-pod-spec-check.js";

// A pod's init phase in the wire fixture (kubernetes-wire-fixture.ts), as
// a kubelet runs it (io.k8s.api.core.v1.PodSpec `initContainers`: each in
// order, to completion, before any container starts; one that fails fails
// a pod whose restartPolicy is Never). The kubelet first makes the pod's
// sandbox, whose namespaces every container joins; the engine joins only a
// running container's, so a pod with init containers gets a sandbox
// container here (the computer image asleep, as the pause container), and
// its init containers and containers all join it. A pod without init
// containers keeps the fixture's older shape: its first container holds
// the namespaces.

/** What the init phase left: the sandbox and init containers made (removed with the pod), and how it ended. */
export interface PodInitOutcome {
  readonly made: string[];
  /** The sandbox every container joins; undefined when the pod has no init containers. */
  readonly sandbox?: string;
  readonly podIP?: string;
  /** Set when an init container did not complete: the pod does not go on. */
  readonly failed?: boolean;
}

/**
 * Runs the pod's init containers in their sandbox, writing each one's
 * status into `pod.status.initContainerStatuses` and `Initialized` into
 * its conditions once all completed. `stillWanted` is false once the pod
 * is being deleted.
 */
export async function initializePod(
  docker: Docker,
  base: Omit<PodContainerPlan, "container" | "first" | "shared" | "binds">,
  pod: Json,
  bindsOf: (container: Json) => string[],
  stillWanted: () => boolean,
): Promise<PodInitOutcome> {
  const spec = pod.spec as Json;
  const inits = (spec.initContainers ?? []) as Json[];
  if (inits.length === 0) return { made: [] };
  const made: string[] = [];
  const sandbox = await docker.createContainer({
    name: `k8s-fixture-${base.fixtureId}-${base.namespace}-${base.pod}`.slice(0, 120),
    Image: (spec.containers as Json[])[0]?.image as string,
    Entrypoint: ["sleep", "infinity"],
    User: "65535:65535",
    Labels: {
      [FIXTURE_LABEL]: base.fixtureId,
      "io.kubernetes.pod.namespace": base.namespace,
      "io.kubernetes.pod.name": base.pod,
    },
    HostConfig: { IpcMode: "shareable", Init: spec.shareProcessNamespace === true, CapDrop: ["ALL"] },
  });
  made.push(sandbox.id);
  await sandbox.start();
  const info = await sandbox.inspect();
  const podIP = Object.values(info.NetworkSettings.Networks ?? {})[0]?.IPAddress || undefined;
  const statuses = inits.map((c) => ({
    name: c.name,
    image: c.image,
    imageID: "",
    ready: false,
    restartCount: 0,
    state: { waiting: { reason: "PodInitializing" } } as Json,
  }));
  pod.status.initContainerStatuses = statuses;
  for (const [i, init] of inits.entries()) {
    const status = statuses[i] as Json;
    const refused = nonRootViolation(base.pod, spec, init);
    if (refused) {
      status.state = { waiting: { reason: "CreateContainerConfigError", message: refused } };
      return { made, sandbox: sandbox.id, podIP, failed: true };
    }
    const plan = { ...base, container: init, first: sandbox.id, shared: true, binds: bindsOf(init) };
    const created = await createPodContainer(docker, plan);
    made.push(created.id);
    if (!stillWanted()) return { made, sandbox: sandbox.id, podIP, failed: true };
    const startedAt = new Date().toISOString();
    await created.start();
    status.state = { running: { startedAt } };
    const { StatusCode: exitCode } = (await created.wait()) as { StatusCode: number };
    status.state = {
      terminated: {
        exitCode,
        reason: exitCode === 0 ? "Completed" : "Error",
        startedAt,
        finishedAt: new Date().toISOString(),
        containerID: `docker://${created.id}`,
      },
    };
    status.ready = exitCode === 0;
    if (exitCode !== 0) {
      // restartPolicy Never: the pod fails, as the kubelet leaves it.
      pod.status.phase = "Failed";
      pod.status.reason = "Error";
      return { made, sandbox: sandbox.id, podIP, failed: true };
    }
  }
  pod.status.conditions.push({ type: "Initialized", status: "True", lastTransitionTime: new Date().toISOString() });
  return { made, sandbox: sandbox.id, podIP };
}
