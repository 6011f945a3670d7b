/**
 * Label and annotation keys every computer pod carries, so `list` finds only
 * this project's pods and a person reading `kubectl get pods --show-labels`
 * sees which computer and home a pod serves. Label values are limited to 63
 * characters, so the full ids also sit in annotations of the same keys.
 */
export const COMPUTER_POD_LABELS = {
  /** The well-known name label; every computer pod has `agent-computer`. */
  name: "app.kubernetes.io/name",
  managedBy: "app.kubernetes.io/managed-by",
  computerId: "agent-computer.org/computer-id",
  homeKey: "agent-computer.org/home-key",
  /** A Private Computer's bot; set it through the spec's labels. */
  botId: "agent-computer.org/bot-id",
  /** Annotations only: what reconnect needs to drive the pod again. */
  workspacePath: "agent-computer.org/workspace-path",
  screenLimit: "agent-computer.org/screen-limit",
} as const;

/** The value of `app.kubernetes.io/name` on every computer pod. */
export const COMPUTER_APP_NAME = "agent-computer";
