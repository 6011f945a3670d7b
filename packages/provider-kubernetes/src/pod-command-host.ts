import type { KubeConfig } from "@kubernetes/client-node";
import type { PodAddress } from "./pod-address.js";

/** What running a command in a pod needs from its machine. */
export interface PodCommandHost {
  readonly kubeConfig: KubeConfig;
  readonly pod: PodAddress;
  /** The exec subprotocol the API server speaks (learned once per provider). */
  execProtocol(): Promise<string>;
  /** Whether the pod still exists and is not being deleted; asked only when an exec ends abnormally. */
  podAlive(): Promise<boolean>;
  /** The error for calls on a pod that no longer exists. */
  goneError(): Error;
}
