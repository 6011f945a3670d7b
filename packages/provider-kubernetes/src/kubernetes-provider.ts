import { randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  AgentComputerError,
  loggerOf,
  type OpContext,
  type ProviderCapabilities,
  type ProviderRef,
  parseInput,
  type ResolvedComputerSpec,
  type SandboxProvider,
} from "@agent-computer/core";
import { abortable, defineSandboxProvider, matchRefId } from "@agent-computer/core/provider-utils";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { EgressDenialListeners } from "@agent-computer/egress";
import { CoreV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { COMPUTER_APP_NAME, COMPUTER_POD_LABELS } from "./computer-pod-labels.js";
import { computerPodManifest, HOME_VOLUME, type MountedHomeSource } from "./computer-pod-manifest.js";
import { DISPLAY_CONTAINER_NAME } from "./display-container-manifest.js";
import { EgressDenialFollower } from "./egress-denial-follower.js";
import { EGRESS_CONTAINER_NAME, egressFenceOf } from "./egress-fence-manifest.js";
import { apiStatus, kubernetesApiFailure } from "./kubernetes-api-failure.js";
import { KubernetesMachine, podIsAlive } from "./kubernetes-machine.js";
import type { KubernetesMachineHost } from "./kubernetes-machine-host.js";
import { KUBERNETES_SANDBOX_ENV, kubernetesOptionsFromEnv } from "./kubernetes-options-from-env.js";
import {
  isLabelKey,
  isLabelValue,
  type KubernetesProviderOptions,
  kubernetesProviderOptionsSchema,
  type ResolvedKubernetesProviderOptions,
} from "./kubernetes-provider-options.js";
import { PodExecSession } from "./pod-exec-session.js";

/**
 * Desktops through the shared LinuxDesktopRuntime over pods/exec, with its
 * page browser, and screens and terminals through the gateway on the pod
 * IP; stop deletes the pod (the saved home is the persistence boundary);
 * the home is copied in and out (a provider with a home claim reports
 * `mountedHome: true` instead); pods do not bill while running; an
 * `egress` policy fences the pod to its own egress container (README,
 * "Egress by policy").
 */
export const KUBERNETES_CAPABILITIES: ProviderCapabilities = {
  desktop: true,
  multiScreen: true,
  pageBrowser: true,
  terminal: true,
  billsWhileRunning: false,
  stopKeepsMachine: false,
  mountedHome: false,
  egress: true,
};

/** `<namespace>/<pod name>`, both DNS labels. */
const POD_REF = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;
/**
 * How often a new pod is read while waiting for Ready (no watch: the Role
 * grants only get): every 25 ms for the first 1.5 s, because a pod on a
 * warm node is ready in a few hundred milliseconds and a coarser poll adds
 * up to its own period to every start, then every 200 ms.
 */
const READY_POLL_FAST_MS = 25;
const READY_POLL_FAST_FOR_MS = 1500;
const READY_POLL_MS = 200;

/**
 * Computers as pods (docs/architecture.md §9): one pod per computer in a namespace that
 * must exist, from the computer image, as uid 1000 without the API's
 * credentials; commands, files and the home through `pods/exec`. Settings
 * come from `options`, then from `KUBERNETES_SANDBOX_*` variables.
 */
export function kubernetesProvider(
  options: Partial<KubernetesProviderOptions> = {},
  env: Record<string, string | undefined> = process.env,
): SandboxProvider {
  const merged = { ...kubernetesOptionsFromEnv(env), ...withoutUndefined(options) };
  if (merged.namespace === undefined) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      'Invalid KubernetesProviderOptions: at "namespace": required; pass it or set KUBERNETES_SANDBOX_NAMESPACE.',
    );
  }
  const parsed = parseInput(kubernetesProviderOptionsSchema, merged, "KubernetesProviderOptions");
  const mountedHome = mountedHomeOf(parsed);
  const capabilities: ProviderCapabilities = { ...KUBERNETES_CAPABILITIES, mountedHome: mountedHome !== undefined };
  const kubeConfig = loadKubeConfig(parsed.kubeConfig);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = parsed.namespace;
  let protocol: Promise<string> | undefined;
  // The app's onEgressDenied and every watchEgressDenials subscriber (the runtime's egress-denied events).
  const denialListeners = new EgressDenialListeners(parsed.onEgressDenied);
  const denials = new EgressDenialFollower(kubeConfig, namespace, denialListeners.notify);

  const host: KubernetesMachineHost = {
    kubeConfig,
    core,
    namespace,
    containerName: parsed.containerName,
    terminationGracePeriodSeconds: parsed.terminationGracePeriodSeconds,
    restoreLimits: parsed.restoreLimits ?? {},
    execProtocol(pod) {
      // One probe per provider: the API server picks v5 when it can, else v4.
      protocol ??= probeProtocol(kubeConfig, { namespace, name: pod, container: parsed.containerName });
      protocol.catch(() => {
        protocol = undefined;
      });
      return protocol;
    },
  };

  const deletePod = (name: string) =>
    core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).then(
      () => undefined,
      () => undefined,
    );

  /** Waits until the pod is Ready; says why not when it cannot be. */
  const waitReady = async (name: string, signal: AbortSignal, timeoutMs: number): Promise<V1Pod> => {
    const until = Date.now() + timeoutMs;
    let waitingFor = "the pod to be scheduled";
    const began = Date.now();
    for (;;) {
      let pod: V1Pod;
      try {
        pod = await abortable(core.readNamespacedPod({ name, namespace }), signal);
      } catch (error) {
        if (apiStatus(error) === 404) {
          throw new AgentComputerError("UNAVAILABLE", `The pod ${namespace}/${name} disappeared while starting.`);
        }
        throw kubernetesApiFailure(error, `read pod ${namespace}/${name}`, namespace);
      }
      if (!podIsAlive(pod)) {
        const reason = pod.status?.reason ?? pod.status?.phase ?? "deleted";
        throw new AgentComputerError(
          "UNAVAILABLE",
          `The pod ${namespace}/${name} ended before it was ready (${reason}${pod.status?.message ? `: ${pod.status.message}` : ""}).`,
        );
      }
      if (pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return pod;
      const unscheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
      const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.reason)
        waitingFor = `${waiting.reason}${waiting.message ? `: ${waiting.message.slice(0, 200)}` : ""}`;
      else if (pod.status?.phase === "Running") waitingFor = "the readiness probe";
      else if (unscheduled)
        waitingFor = `a node: the scheduler cannot place it (${unscheduled.reason ?? "Unschedulable"}: ${(unscheduled.message ?? "no message").slice(0, 300)})`;
      if (Date.now() >= until) {
        if (unscheduled && mountedHome && /affinity/i.test(unscheduled.message ?? "")) {
          throw new AgentComputerError(
            "TIMEOUT",
            `The pod ${namespace}/${name} was not ready within ${timeoutMs} ms: still waiting for ${waitingFor}; it was deleted. With the home claim "${mountedHome.claim}" it must run on the node of a pod labelled ${JSON.stringify(mountedHome.colocateLabels)} in namespace "${mountedHome.colocateNamespace}" (${KUBERNETES_SANDBOX_ENV.homeColocateNamespace}, ${KUBERNETES_SANDBOX_ENV.homeColocateLabels}); check that such a pod is running and the labels match it.`,
            { details: { waitingFor, reason: unscheduled.reason } },
          );
        }
        throw new AgentComputerError(
          "TIMEOUT",
          `The pod ${namespace}/${name} was not ready within ${timeoutMs} ms (still waiting for ${waitingFor}); it was deleted. Check the image can be pulled and the node has room, or raise readyTimeoutMs.`,
          { details: { waitingFor } },
        );
      }
      const pause = Date.now() - began < READY_POLL_FAST_FOR_MS ? READY_POLL_FAST_MS : READY_POLL_MS;
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, until - Date.now()))));
      if (signal.aborted) throw signal.reason;
    }
  };

  // A pod made before the claim was set keeps copying its home until it is
  // stopped: whether the home is mounted is read from the pod, not the options.
  const mountOf = (pod: V1Pod) => {
    if (!pod.spec?.volumes?.some((v) => v.name === HOME_VOLUME && v.persistentVolumeClaim)) return undefined;
    const homeKey = pod.metadata?.annotations?.[COMPUTER_POD_LABELS.homeKey];
    return { localHomeDir: localHomeDir(homeKey) };
  };
  const localHomeDir = (homeKey: string | undefined) =>
    parsed.homeClaimLocalPath && homeKey ? join(parsed.homeClaimLocalPath, "homes", homeKey) : undefined;

  const machineOf = (pod: V1Pod, context: OpContext): KubernetesMachine => {
    const fenced = pod.spec?.containers?.some((c) => c.name === EGRESS_CONTAINER_NAME) === true;
    // Denials from now on: the ones before this reconnect were this process's, or nobody's.
    if (fenced) denials.follow(pod.metadata?.name as string, loggerOf(context), new Date());
    return new KubernetesMachine(
      host,
      pod.metadata?.name as string,
      pod.metadata?.annotations?.[COMPUTER_POD_LABELS.workspacePath] ?? parsed.workspacePath,
      // Written as an annotation (computer-pod-manifest.ts), so read from there.
      Number(pod.metadata?.annotations?.[COMPUTER_POD_LABELS.screenLimit] ?? parsed.screenLimit) || 0,
      mountOf(pod),
      // Likewise whether its display runs apart: from the pod's own containers.
      pod.spec?.containers?.some((c) => c.name === DISPLAY_CONTAINER_NAME)
        ? { display: DISPLAY_CONTAINER_NAME, fenced }
        : { fenced },
    );
  };

  return defineSandboxProvider({
    kind: "kubernetes",
    capabilities,
    defaults: parsed,
    defaultImage: computerImageRef,
    checkSpec: refuseLabels,
    watchEgressDenials: denialListeners.watch,
    machineId(id) {
      const match = matchRefId("kubernetes", id, POD_REF, "<namespace>/<pod name>");
      const [, refNamespace, , name] = match as unknown as [string, string, string, string];
      if (refNamespace !== namespace) {
        throw new AgentComputerError(
          "INVALID_ARGUMENT",
          `The ref kubernetes:${id} is in namespace "${refNamespace}" but this provider works in "${namespace}"; reconnect with a provider for that namespace.`,
        );
      }
      return name;
    },

    async provision({ spec: resolved, image, context, signal }) {
      const name = podNameFor(resolved.homeKey);
      const policy = resolved.egress ?? parsed.egress;
      if (policy && !parsed.displayContainer) {
        throw new AgentComputerError(
          "UNSUPPORTED",
          "An egress policy needs the display in its own container (kubernetesProvider({ displayContainer: true }), the default): with one container the pod shares its process namespace, which would put the egress proxy in the bot's sight.",
        );
      }
      const fence = policy
        ? egressFenceOf({
            image,
            computerId: resolved.computerId,
            policy,
            podName: name,
            namespace,
            ...(parsed.egressUpstreamCa ? { upstreamCa: parsed.egressUpstreamCa } : {}),
          })
        : undefined;
      const manifest = computerPodManifest(name, resolved, image, parsed, mountedHome, fence);
      let created: V1Pod;
      try {
        created = await abortable(core.createNamespacedPod({ namespace, body: manifest }), signal);
      } catch (error) {
        // An abort may land after the server created the pod.
        if (signal.aborted) void deletePod(name);
        throw kubernetesApiFailure(error, `create pod ${namespace}/${name}`, namespace);
      }
      if (fence?.credentials) {
        // Made once the pod has a uid to be owned by; until then the kubelet waits to mount it (egress-credentials-secret.ts).
        const body = fence.credentials.secretOwnedBy({ name, uid: created.metadata?.uid ?? "" });
        try {
          await abortable(core.createNamespacedSecret({ namespace, body }), signal);
        } catch (error) {
          // The pod goes; a Secret the server made anyway goes with it (its owner is gone).
          await deletePod(name);
          throw kubernetesApiFailure(error, `create secret ${namespace}/${fence.credentials.secretName}`, namespace);
        }
      }
      try {
        await waitReady(name, signal, parsed.readyTimeoutMs);
      } catch (error) {
        await deletePod(name);
        throw AgentComputerError.is(error) ? error : kubernetesApiFailure(error, "wait for the pod", namespace);
      }
      const ref: ProviderRef = `kubernetes:${namespace}/${name}`;
      if (fence) denials.follow(name, loggerOf(context));
      loggerOf(context).info("kubernetes machine provisioned", { ref, homeKey: resolved.homeKey, image });
      return new KubernetesMachine(
        host,
        name,
        parsed.workspacePath,
        resolved.screenLimit,
        mountedHome ? { localHomeDir: localHomeDir(resolved.homeKey) } : undefined,
        parsed.displayContainer ? { display: DISPLAY_CONTAINER_NAME, fenced: fence !== undefined } : {},
      );
    },

    async reconnect(name, { ref, context, signal }) {
      let pod: V1Pod;
      try {
        pod = await abortable(core.readNamespacedPod({ name, namespace }), signal);
      } catch (error) {
        if (apiStatus(error) === 404) return "gone";
        throw kubernetesApiFailure(error, `reconnect ${ref}`, namespace);
      }
      // Not one of ours, being deleted, finished or evicted: never drive it.
      if (pod.metadata?.labels?.[COMPUTER_POD_LABELS.name] !== COMPUTER_APP_NAME) return "gone";
      if (!podIsAlive(pod)) return "gone";
      try {
        await waitReady(name, signal, parsed.readyTimeoutMs);
      } catch (error) {
        if (AgentComputerError.is(error) && /ended before it was ready|disappeared/.test(error.message)) return "gone";
        throw error;
      }
      return machineOf(pod, context);
    },

    async list({ labels, running, signal }) {
      // No pod can carry a label Kubernetes would refuse, so such a filter matches nothing.
      if (Object.entries(labels).some(([k, v]) => !isLabelKey(k) || !isLabelValue(v))) return [];
      const selector = Object.entries({ ...labels, [COMPUTER_POD_LABELS.name]: COMPUTER_APP_NAME })
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
      try {
        const found = await abortable(core.listNamespacedPod({ namespace, labelSelector: selector }), signal);
        // A stopped computer has no pod; a pending one does not run yet.
        const listed = found.items.filter(
          (pod) => !pod.metadata?.deletionTimestamp && (!running || pod.status?.phase === "Running"),
        );
        return listed
          .sort(
            (a, b) =>
              (a.metadata?.creationTimestamp?.valueOf() ?? 0) - (b.metadata?.creationTimestamp?.valueOf() ?? 0) ||
              (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""),
          )
          .map((pod) => `kubernetes:${namespace}/${pod.metadata?.name}` as const);
      } catch (error) {
        throw kubernetesApiFailure(error, `list pods in ${namespace}`, namespace);
      }
    },
  });
}

/**
 * The claim to mount homes from, or undefined when homes are copied: no
 * claim, or an object store holds the homes (then the claim is ignored).
 * A claim without both colocation settings is INVALID_ARGUMENT naming them.
 */
function mountedHomeOf(options: ResolvedKubernetesProviderOptions): MountedHomeSource | undefined {
  if (!options.homeClaim || options.objectStorageBucket) return undefined;
  const missing: string[] = [];
  if (!options.homeColocateNamespace)
    missing.push(`homeColocateNamespace (${KUBERNETES_SANDBOX_ENV.homeColocateNamespace})`);
  if (!options.homeColocateLabels || Object.keys(options.homeColocateLabels).length === 0)
    missing.push(`homeColocateLabels (${KUBERNETES_SANDBOX_ENV.homeColocateLabels}, a JSON object)`);
  if (missing.length > 0) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid KubernetesProviderOptions: the home claim "${options.homeClaim}" (${KUBERNETES_SANDBOX_ENV.homeClaim}) needs ${missing.join(" and ")}: a ReadWriteOnce volume attaches to one node, so computer pods must run beside the pods that hold it.`,
      { details: { missing: missing.map((m) => m.split(" ")[0]) } },
    );
  }
  return {
    claim: options.homeClaim,
    colocateNamespace: options.homeColocateNamespace as string,
    colocateLabels: options.homeColocateLabels as Record<string, string>,
  };
}

/** Kubernetes refuses labels other providers take; say which before asking the API server. */
function refuseLabels(spec: ResolvedComputerSpec): void {
  for (const [key, value] of Object.entries(spec.labels)) {
    if (!isLabelKey(key) || !isLabelValue(value)) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid ComputerSpec: at "labels.${key}": Kubernetes takes label keys of [prefix/]name (name at most 63 characters) and values of at most 63 letters, digits, - _ .`,
      );
    }
  }
}

/** `ac-<home key, lowercased, at most 40>-<8 hex>`: a DNS label, unique enough that 409 means a real clash. */
function podNameFor(homeKey: string): string {
  const slug = homeKey
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return `ac-${slug || "home"}-${randomBytes(4).toString("hex")}`;
}

function loadKubeConfig(source: KubeConfig | string | undefined): KubeConfig {
  if (source instanceof KubeConfig) return source;
  const config = new KubeConfig();
  try {
    if (source === undefined) config.loadFromDefault();
    else config.loadFromString(source);
  } catch (error) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `Invalid kubeConfig: ${source === undefined ? "the default kubeconfig (KUBECONFIG, ~/.kube/config or the in-cluster service account) could not be loaded" : "the kubeconfig text could not be parsed"} (${(error as Error).message.slice(0, 200)}).`,
    );
  }
  if (!config.getCurrentCluster()) {
    throw new AgentComputerError("INVALID_ARGUMENT", "Invalid kubeConfig: it names no current cluster.");
  }
  return config;
}

async function probeProtocol(
  kubeConfig: KubeConfig,
  pod: { namespace: string; name: string; container: string },
): Promise<string> {
  const session = await PodExecSession.open(kubeConfig, pod, ["true"], { stdin: false, onOutput: () => true });
  await session.ended;
  session.close();
  return session.protocol;
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
