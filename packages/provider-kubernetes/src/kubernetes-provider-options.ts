import { restoreLimitsSchema } from "@agent-computer/checkpoint";
import { egressPolicySchema } from "@agent-computer/core";
import type { EgressDenial } from "@agent-computer/egress";
import { KubeConfig } from "@kubernetes/client-node";
import { z } from "zod";

const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes label key: an optional DNS-subdomain prefix, a slash, a name of at most 63 characters. */
export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  if (!LABEL_NAME.test(name)) return false;
  return prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix));
}

/** A Kubernetes label value: at most 63 characters of letters, digits, `-`, `_`, `.`. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

const labelsSchema = z.record(
  z.string().refine(isLabelKey, "a Kubernetes label key ([prefix/]name, name at most 63 characters)"),
  z.string().refine(isLabelValue, "a Kubernetes label value (at most 63 letters, digits, - _ .)"),
);

export const kubernetesProviderOptionsSchema = z.object({
  /**
   * How to reach the API server: a KubeConfig, or kubeconfig text (YAML or
   * JSON). Default: `KubeConfig.loadFromDefault()` (KUBECONFIG, ~/.kube/config,
   * or the pod's service account when running in the cluster).
   */
  kubeConfig: z.union([z.instanceof(KubeConfig), z.string().min(1)]).optional(),
  /** The namespace computer pods live in; it must exist (KUBERNETES_SANDBOX_NAMESPACE). */
  namespace: z
    .string()
    .max(63)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a namespace name (lowercase letters, digits, -)"),
  /**
   * The computer image (KUBERNETES_SANDBOX_COMPUTER_IMAGE; default
   * `computerImageRef()` of desktop-runtime). Nodes must be able to pull
   * it: push it to your registry and pin a digest in production.
   */
  image: z.string().min(1).optional(),
  /** CPU limit as a quantity, such as "2" or "500m" (KUBERNETES_SANDBOX_CPU_LIMIT). */
  cpuLimit: z.string().regex(QUANTITY, 'a CPU quantity such as "2" or "500m"').optional(),
  /** Memory limit as a quantity, such as "4Gi" (KUBERNETES_SANDBOX_MEMORY_LIMIT). */
  memoryLimit: z.string().regex(QUANTITY, 'a memory quantity such as "4Gi"').optional(),
  /** A RuntimeClass such as "kata" or "gvisor" for a VM or user-space kernel boundary. */
  runtimeClassName: z.string().max(253).regex(DNS_SUBDOMAIN, "a RuntimeClass name").optional(),
  /** Extra labels on every pod (KUBERNETES_SANDBOX_POD_LABELS, a JSON object of strings). */
  podLabels: labelsSchema.default({}),
  /** Extra annotations on every pod (KUBERNETES_SANDBOX_POD_ANNOTATIONS, a JSON object of strings). */
  podAnnotations: z.record(z.string().min(1).max(316), z.string()).default({}),
  /** How long a new pod has to become Ready before it is deleted and provision fails TIMEOUT. */
  readyTimeoutMs: z.number().int().positive().default(120_000),
  /**
   * Where the home lives inside the pod. A folder below the image user's
   * home, not that home itself, because an import swaps the whole folder by
   * renaming it and uid 1000 may rename only inside a folder it owns.
   */
  workspacePath: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]*\/[A-Za-z0-9._-]+$/, "an absolute path below a folder, without a trailing slash")
    .default("/home/computer/workspace"),
  /** Most desktops active at once per computer when the spec does not say (0 = no limit). */
  screenLimit: z.number().int().nonnegative().default(0),
  /** Seconds a stopped pod has to exit before it is killed (default 5). */
  terminationGracePeriodSeconds: z.number().int().nonnegative().default(5),
  /**
   * A seccomp profile installed on the nodes (`localhostProfile`, relative to
   * the kubelet's seccomp folder) for the computer pods. Chromium's sandbox
   * needs the namespace calls that desktop-runtime's profile adds to the
   * runtime default (`computerSeccompProfile()`); without it pods run with
   * `RuntimeDefault` and desktops cannot start their browser.
   */
  seccompLocalhostProfile: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, "a relative file path")
    .optional(),
  /** Size of the pod's memory-backed /dev/shm (Chromium needs about 1 GiB). */
  shmSizeLimit: z.string().regex(QUANTITY, 'a quantity such as "1Gi"').default("1Gi"),
  /** The container's name inside each pod (not `display`, the display container's). */
  containerName: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    .refine((name) => name !== "display", "not display, the name of the pod's display container")
    .default("computer"),
  /**
   * Run the display stack (Xvfb, openbox, x11vnc, Chromium, the proxy relay
   * and the screen gateway with the resident service) in a second
   * container of the pod, from the same image, sharing only the home: the
   * bot's processes can then neither signal, trace nor reach the display
   * during a person's takeover (README, "Takeover"; docs/architecture.md
   * §4). False keeps the display in the bot's container.
   */
  displayContainer: z.boolean().default(true),
  /**
   * The PersistentVolumeClaim, in the computer namespace, that holds the
   * app's data folder (KUBERNETES_SANDBOX_HOME_CLAIM): each pod mounts
   * `homes/<home key>` from it at the workspace, so the home is never
   * copied (`mountedHome`). Needs `homeColocateNamespace` and
   * `homeColocateLabels`; ignored when `objectStorageBucket` is set.
   */
  homeClaim: z.string().max(253).regex(DNS_SUBDOMAIN, "a PersistentVolumeClaim name").optional(),
  /** The namespace of the pods that hold the claim's volume (KUBERNETES_SANDBOX_HOME_COLOCATE_NAMESPACE). */
  homeColocateNamespace: z
    .string()
    .max(63)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a namespace name (lowercase letters, digits, -)")
    .optional(),
  /**
   * Labels of the pods that hold the claim's volume, such as
   * {"app":"agent-computer-api"} (KUBERNETES_SANDBOX_HOME_COLOCATE_LABELS, a
   * JSON object): a ReadWriteOnce volume attaches to one node, so computer
   * pods get a required pod affinity to those pods.
   */
  homeColocateLabels: labelsSchema.optional(),
  /**
   * Where this process sees the claim's root (the app's data folder, as
   * mounted in the API's own pod). With it, `exportWorkspace` reads the home
   * there and `importWorkspace` on a stopped machine writes it there, as on
   * local Docker; without it, imports of a mounted home are UNSUPPORTED.
   */
  homeClaimLocalPath: z.string().min(1).optional(),
  /**
   * The object store's bucket when homes are kept there (OBJECT_STORAGE_BUCKET):
   * then homes are copied in and out as usual and `homeClaim` is ignored.
   */
  objectStorageBucket: z.string().min(1).optional(),
  /** Bounds on what a workspace import accepts (entries, depth, file and total bytes); checkpoint's defaults when unset. */
  restoreLimits: restoreLimitsSchema.optional(),
  /**
   * Ignored: imports now stream to the pod as they are checked, staging
   * nothing on this host. Kept so settings that name it still parse.
   */
  stagingDir: z.string().min(1).optional(),
  /**
   * The egress policy of every computer whose spec gives none (a spec's
   * `egress` wins). Absent: pods reach the network as before. With a
   * policy, the pod's only way out is its own egress container (README,
   * "Egress by policy"); it needs `displayContainer` (the default).
   */
  egress: egressPolicySchema.optional(),
  /**
   * Called for each request a computer's egress proxy refused, with the
   * computer's id: the app's activity event. Read from the egress
   * container's log (`get` on `pods/log`), from the pod's start, or from a
   * reconnect on.
   */
  onEgressDenied: z.custom<(denial: EgressDenial) => void>((v) => typeof v === "function").optional(),
  /**
   * CA certificates (PEM, one or more) a computer's egress proxy trusts
   * besides Node's bundled roots when it re-encrypts to a host named in a
   * policy's `credentials`: an internal API's CA (the suite's fixture CA in
   * the tests). Goes into each such computer's Secret.
   */
  egressUpstreamCa: z.string().includes("-----BEGIN CERTIFICATE-----").optional(),
});

export type KubernetesProviderOptions = z.input<typeof kubernetesProviderOptionsSchema>;
export type ResolvedKubernetesProviderOptions = z.output<typeof kubernetesProviderOptionsSchema>;
