import type { RestoreLimits } from "@agent-computer/checkpoint";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";

/** What a Kubernetes machine needs from its provider. */
export interface KubernetesMachineHost {
  readonly kubeConfig: KubeConfig;
  readonly core: CoreV1Api;
  readonly namespace: string;
  readonly containerName: string;
  /** Seconds `stop` gives the pod to exit. */
  readonly terminationGracePeriodSeconds: number;
  /** What an import accepts (checkpoint's restore limits). */
  readonly restoreLimits: RestoreLimits;
  /** The exec subprotocol the API server speaks, learned once with a probe exec into `pod`. */
  execProtocol(pod: string): Promise<string>;
}
