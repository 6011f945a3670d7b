import { COMPUTER_LABELS } from "@agent-computer/core";

/**
 * Label and annotation keys every computer pod carries: core's one set
 * (`COMPUTER_LABELS`) plus Kubernetes' well-known app labels, so `list` finds
 * only this project's pods and a person reading `kubectl get pods
 * --show-labels` sees which computer and home a pod serves. Label values are
 * limited to 63 characters (core's `labelValueOf`), so the full ids also sit
 * in annotations of the same keys; `workspacePath` and `screenLimit` are
 * annotations only, what reconnect needs to drive the pod again.
 */
export const COMPUTER_POD_LABELS = {
  ...COMPUTER_LABELS,
  /** The well-known name label; every computer pod has `agent-computer`. */
  name: "app.kubernetes.io/name",
  managedBy: "app.kubernetes.io/managed-by",
} as const;

/** The value of `app.kubernetes.io/name` on every computer pod. */
export const COMPUTER_APP_NAME = "agent-computer";
