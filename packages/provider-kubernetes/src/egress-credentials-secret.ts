import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { computerCredentialFiles, EGRESS_CA_BUNDLE_FILE, EGRESS_CA_DIR, EGRESS_CA_FILE } from "@agent-computer/egress";
import type { V1Secret, V1Volume, V1VolumeMount } from "@kubernetes/client-node";

// Credentials added on the way out on Kubernetes (README, "Egress by
// policy"; issue 53). One Secret per pod, made once the pod exists and
// owned by it (metadata.ownerReferences), so the cluster's garbage
// collector deletes it with the pod, however the pod goes (destroy, stop,
// an eviction, a `kubectl delete`, a process that died before cleaning
// up). It holds the proxy's file (the credentials' values, the proxy's
// certificate and key: the CA's key was dropped once it signed) and the
// computer's CA. Two secret volumes of it project different keys
// (io.k8s.api.core.v1.SecretVolumeSource `items`): the egress container
// alone mounts the proxy's file; the bot's and the display's containers
// mount only the CA and its bundle. Nothing of it is in the pod's spec,
// whose text anyone who may read pods reads.

/** The Secret's keys. */
const CREDENTIALS_KEY = "credentials.json";
const UPSTREAM_CA_KEY = "upstream-ca.pem";
/** The pod's volumes of the Secret: the proxy's, and the computer's (the CA only). */
const PROXY_SECRET_VOLUME = "egress-credentials";
const CA_SECRET_VOLUME = "egress-ca";
/** Where the egress container reads the proxy's file (proxy-main.ts's `credentialsDir`). */
export const EGRESS_CREDENTIALS_DIR = "/etc/agent-computer-egress-credentials";
/**
 * The proxy's files: readable by their owner only (0400). The pod's
 * fsGroup (the computer's gid) makes the kubelet give them that group and
 * its read bit (what the egress container, uid 65534, reads them by: fsGroup
 * is a supplementary group of every container of the pod); the bot's
 * container never mounts this volume.
 */
const PROXY_FILES_MODE = 0o400;
/** The computer's CA and bundle: public. */
const CA_FILES_MODE = 0o444;

/** A fenced pod's credentials: the Secret to make once the pod exists, and what each container mounts. */
export interface EgressCredentialsSecret {
  readonly secretName: string;
  /** The Secret, owned by the pod `owner` (its name and uid, as the API server gave them at create). */
  secretOwnedBy(owner: { readonly name: string; readonly uid: string }): V1Secret;
  readonly volumes: V1Volume[];
  /** The egress container's mount of the proxy's file. */
  readonly proxyMount: V1VolumeMount;
  /** The bot's and the display's mount of the CA. */
  readonly computerMount: V1VolumeMount;
  /** The variables (`NAME=value`) that make the bot's and the display's programs trust the CA. */
  readonly env: readonly string[];
  /** The proxy's file name in `EGRESS_CREDENTIALS_DIR` (the policy file's `credentialsFile`). */
  readonly credentialsFile: string;
  /** The proxy's extra upstream CA file, when `egressUpstreamCa` is set. */
  readonly upstreamCaFile?: string;
}

/** The Secret and volumes for a pod named `podName` whose policy names credentials. */
export function egressCredentialsSecret(input: {
  readonly podName: string;
  readonly namespace: string;
  readonly computerId: string;
  readonly credentials: ResolvedEgressPolicy["credentials"];
  /** `egressUpstreamCa`: CAs the proxy trusts besides Node's roots for the credentials' hosts. */
  readonly upstreamCa?: string;
}): EgressCredentialsSecret {
  const files = computerCredentialFiles(input.computerId, input.credentials);
  const secretName = `${input.podName}-egress`;
  const data: Record<string, string> = {
    [CREDENTIALS_KEY]: base64(files.credentialsFile),
    ...Object.fromEntries(Object.entries(files.computerFiles).map(([name, text]) => [name, base64(text)])),
    ...(input.upstreamCa ? { [UPSTREAM_CA_KEY]: base64(input.upstreamCa) } : {}),
  };
  const proxyKeys = [CREDENTIALS_KEY, ...(input.upstreamCa ? [UPSTREAM_CA_KEY] : [])];
  return {
    secretName,
    secretOwnedBy: (owner) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: secretName,
        namespace: input.namespace,
        labels: { "app.kubernetes.io/managed-by": "agent-computer" },
        // No blockOwnerDeletion: setting it needs the pod's finalizers in the Role (OwnerReferencesPermissionEnforcement).
        ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: owner.name, uid: owner.uid }],
      },
      type: "Opaque",
      immutable: true,
      data,
    }),
    volumes: [
      {
        name: PROXY_SECRET_VOLUME,
        secret: {
          secretName,
          items: proxyKeys.map((key) => ({ key, path: key })),
          defaultMode: PROXY_FILES_MODE,
        },
      },
      {
        name: CA_SECRET_VOLUME,
        secret: {
          secretName,
          items: [EGRESS_CA_FILE, EGRESS_CA_BUNDLE_FILE].map((key) => ({ key, path: key })),
          defaultMode: CA_FILES_MODE,
        },
      },
    ],
    proxyMount: { name: PROXY_SECRET_VOLUME, mountPath: EGRESS_CREDENTIALS_DIR, readOnly: true },
    computerMount: { name: CA_SECRET_VOLUME, mountPath: EGRESS_CA_DIR, readOnly: true },
    env: files.env,
    credentialsFile: CREDENTIALS_KEY,
    ...(input.upstreamCa ? { upstreamCaFile: `${EGRESS_CREDENTIALS_DIR}/${UPSTREAM_CA_KEY}` } : {}),
  };
}

function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}
