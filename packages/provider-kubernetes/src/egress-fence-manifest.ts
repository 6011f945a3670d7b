import { AgentComputerError, type ResolvedEgressPolicy } from "@agent-computer/core";
import {
  EGRESS_PROXY_PORT,
  type EgressPolicyFile,
  egressChromiumPolicy,
  egressProxyEnv,
  policyFileName,
} from "@agent-computer/egress";
import type { V1Container, V1EnvVar, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import {
  EGRESS_CREDENTIALS_DIR,
  type EgressCredentialsSecret,
  egressCredentialsSecret,
} from "./egress-credentials-secret.js";

// Egress by policy on Kubernetes (README, "Egress by policy"; issue 53).
// A pod's containers share one network namespace, so a NetworkPolicy, which
// sees only the pod, cannot tell the proxy's traffic from the bot's. The
// fence is therefore inside the pod: an init container (root, NET_ADMIN
// only) loads nftables rules into the pod's network namespace that let only
// the egress container's uid open connections leaving the pod; the bot
// (uid 1000, no capabilities) can neither change them nor become that uid.

/** The egress proxy's container in a fenced computer pod. */
export const EGRESS_CONTAINER_NAME = "egress";
/** The init container that fences the pod's network namespace. */
export const EGRESS_FENCE_CONTAINER_NAME = "egress-fence";
/** nobody: the only uid whose connections may leave the pod; no process of the image's user runs as it. */
export const EGRESS_PROXY_UID = 65534;
/** The annotation that names a fenced pod's policy (its name only: the policy itself is in the egress container). */
export const EGRESS_POLICY_ANNOTATION = "agent-computer.org/egress-policy";

/** Where the computer image keeps the proxy (desktop-runtime's computer/egress, bundled into image/runtime/lib). */
const PROXY_SCRIPT = "/opt/agent-computer/lib/egress-proxy.cjs";
/** The egress container's own memory volume: its config and policy file (its root file system is read-only). */
const PROXY_VOLUME = "egress-run";
const PROXY_DIR = "/run/agent-computer-egress";
/**
 * The most a policy's file may take: it travels as one argument of the
 * egress container's command, and Linux caps one argument at 128 KiB
 * (MAX_ARG_STRLEN).
 */
const MAX_POLICY_BYTES = 120 * 1024;

/**
 * The rules (nft's syntax, one `inet` table: IPv4 and IPv6 alike) on the
 * pod's way out: packets of connections already allowed (and the answers
 * to connections that came in: the screen gateway's) pass, loopback
 * passes (the pod's containers talk there, the proxy among them), a new
 * flow of any protocol passes only from a socket of the proxy's uid; every
 * other one is refused at once (a TCP reset, else ICMP administratively
 * prohibited) rather than left to time out.
 */
export const EGRESS_FENCE_RULES = `table inet agent_computer_egress {
  chain output {
    type filter hook output priority filter; policy drop;
    ct state established,related accept
    oifname "lo" accept
    meta skuid ${EGRESS_PROXY_UID} accept
    meta l4proto tcp reject with tcp reset
    reject with icmpx type admin-prohibited
  }
}
`;

/**
 * Loads the rules and checks they are there; the pod's other containers
 * start only once this exits 0 (an init container), so none runs unfenced.
 */
const FENCE_START = `printf '%s' "$1" | nft -f - && nft list table inet agent_computer_egress >/dev/null`;

/** Writes the proxy's config and policy into its memory volume, then becomes the proxy. */
const PROXY_START = `mkdir -p "$1/policies" && printf '%s' "$2" > "$1/config.json" && printf '%s' "$3" > "$1/policies/$4" && exec node "$5" "$1/config.json"`;

/** The proxy as the pod's programs reach it: on the pod's loopback only, never on the pod's address. */
const PROXY_ADDRESS = `127.0.0.1:${EGRESS_PROXY_PORT}`;

/** What a fenced pod adds: its init container, its egress container, their volume, and what its other containers get. */
export interface EgressFence {
  /** The policy's name, for the pod's annotation. */
  readonly policyName: string;
  readonly initContainer: V1Container;
  readonly container: V1Container;
  readonly volumes: V1Volume[];
  /** The proxy variables (and the CA's, with credentials), for the bot's container and the display's. */
  readonly env: V1EnvVar[];
  /** What the bot's container and the display's mount besides their own: the CA, with credentials. */
  readonly computerMounts: V1VolumeMount[];
  /** With credentials: the Secret to make once the pod exists (egress-credentials-secret.ts). */
  readonly credentials?: EgressCredentialsSecret;
  /** Added to the display's Chromium policy: every URL but loopback to the proxy, no WebRTC UDP. */
  readonly chromiumPolicy: Record<string, unknown>;
}

/** The fence of a computer pod whose spec carries `policy`. */
export function egressFenceOf(input: {
  readonly image: string;
  readonly computerId: string;
  readonly policy: ResolvedEgressPolicy;
  /** The pod's name and namespace: a policy with credentials gets a Secret named after the pod. */
  readonly podName: string;
  readonly namespace: string;
  /** `egressUpstreamCa`: CAs the proxy trusts besides Node's roots when it re-encrypts to a credential's host. */
  readonly upstreamCa?: string;
}): EgressFence {
  const credentials =
    input.policy.credentials.length > 0
      ? egressCredentialsSecret({
          podName: input.podName,
          namespace: input.namespace,
          computerId: input.computerId,
          credentials: input.policy.credentials,
          ...(input.upstreamCa ? { upstreamCa: input.upstreamCa } : {}),
        })
      : undefined;
  // The policy travels in the egress container's command, in the pod's spec: its credentials' values stay in the Secret.
  const file: EgressPolicyFile = {
    computerId: input.computerId,
    policy: { ...input.policy, credentials: [] },
    ...(credentials ? { credentialsFile: credentials.credentialsFile } : {}),
  };
  const policyText = JSON.stringify(file);
  if (Buffer.byteLength(policyText) > MAX_POLICY_BYTES) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `The egress policy "${input.policy.name}" takes ${Buffer.byteLength(policyText)} bytes; on Kubernetes it travels in the egress container's command, which holds at most ${MAX_POLICY_BYTES}. Use wildcard patterns to shorten its allow list.`,
    );
  }
  const config = {
    port: EGRESS_PROXY_PORT,
    host: "127.0.0.1",
    policiesDir: `${PROXY_DIR}/policies`,
    ...(credentials ? { credentialsDir: EGRESS_CREDENTIALS_DIR } : {}),
    ...(credentials?.upstreamCaFile ? { extraUpstreamCaFiles: [credentials.upstreamCaFile] } : {}),
  };
  const noCapabilities = { drop: ["ALL"] };
  const initContainer: V1Container = {
    name: EGRESS_FENCE_CONTAINER_NAME,
    image: input.image,
    imagePullPolicy: "IfNotPresent",
    command: ["/bin/sh", "-c", FENCE_START, "egress-fence", EGRESS_FENCE_RULES],
    workingDir: "/",
    resources: { limits: { cpu: "100m", memory: "64Mi" } },
    securityContext: {
      // nft speaks netlink to the kernel: root's uid with NET_ADMIN, nothing else, for the few milliseconds it runs.
      runAsUser: 0,
      runAsGroup: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
    },
  };
  const container: V1Container = {
    name: EGRESS_CONTAINER_NAME,
    image: input.image,
    imagePullPolicy: "IfNotPresent",
    command: [
      "/bin/sh",
      "-c",
      PROXY_START,
      "start-egress",
      PROXY_DIR,
      JSON.stringify(config),
      policyText,
      policyFileName("127.0.0.1"),
      PROXY_SCRIPT,
    ],
    workingDir: "/",
    env: [{ name: "LANG", value: "C.UTF-8" }],
    // One computer's proxy (provider-docker's serves every computer of a data folder with 2 CPUs and 256 MiB).
    resources: { limits: { cpu: "1", memory: "256Mi" } },
    securityContext: {
      runAsUser: EGRESS_PROXY_UID,
      runAsGroup: EGRESS_PROXY_UID,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: noCapabilities,
    },
    // Ready once the proxy accepts connections (a connection alone, no request: no denial is reported).
    readinessProbe: {
      exec: {
        command: ["python3", "-c", `import socket; socket.create_connection(("127.0.0.1", ${EGRESS_PROXY_PORT}), 1)`],
      },
      periodSeconds: 1,
      failureThreshold: 1,
    },
    volumeMounts: [{ name: PROXY_VOLUME, mountPath: PROXY_DIR }, ...(credentials ? [credentials.proxyMount] : [])],
  };
  return {
    policyName: input.policy.name,
    initContainer,
    container,
    volumes: [
      { name: PROXY_VOLUME, emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
      ...(credentials?.volumes ?? []),
    ],
    env: [...egressProxyEnv(`http://${PROXY_ADDRESS}`), ...(credentials?.env ?? [])].map((line) => {
      const at = line.indexOf("=");
      return { name: line.slice(0, at), value: line.slice(at + 1) };
    }),
    computerMounts: credentials ? [credentials.computerMount] : [],
    ...(credentials ? { credentials } : {}),
    // The display shares the pod's loopback with the bot: loopback URLs stay there, as Chromium leaves them by default.
    chromiumPolicy: egressChromiumPolicy(PROXY_ADDRESS, { loopbackToProxy: false }),
  };
}
