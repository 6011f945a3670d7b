import { createHash } from "node:crypto";

/**
 * The label names on every computer's machine, one set for every provider
 * and the runtime, so `list` and a person reading `docker ps` or
 * `kubectl get pods --show-labels` see the same names (docs/architecture.md
 * §9). Keys take Kubernetes' `<prefix>/<name>` form, which Docker and the
 * hosted providers accept as they are; values go through `labelValueOf`.
 */
export const COMPUTER_LABELS = {
  /** `"true"` on every machine a provider of this project made; a provider lists and reconnects only those. */
  managed: "agent-computer.org/managed",
  /** The computer the machine serves (`ComputerSpec.computerId`). */
  computerId: "agent-computer.org/computer-id",
  /** The home the machine works on (`ComputerSpec.homeKey`). */
  homeKey: "agent-computer.org/home-key",
  /** A Private computer's bot; the runtime sets it when it provisions one. Team computers have none. */
  botId: "agent-computer.org/bot-id",
  /** The runtime deployment that made the machine; its reconciler touches only machines with its own. */
  deployment: "agent-computer.org/deployment",
  /** Where the home is mounted inside the machine, so reconnect can drive it again. */
  workspacePath: "agent-computer.org/workspace-path",
  /** The machine's cap on active desktops (`ComputerSpec.screenLimit`), so reconnect keeps it. */
  screenLimit: "agent-computer.org/screen-limit",
} as const;

/** One of the label keys in `COMPUTER_LABELS`. */
export type ComputerLabel = (typeof COMPUTER_LABELS)[keyof typeof COMPUTER_LABELS];

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Whether `value` is a Kubernetes label value as it is: at most 63 letters, digits, `-`, `_`, `.`, alphanumeric at both ends. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

/**
 * The value to put under a label (and to list by) for an id: the id itself
 * when it is a Kubernetes label value, else `sha256-` and 48 hex digits of
 * its hash, the same for the same id everywhere. Ids the runtime makes are
 * mostly short enough to stay readable.
 */
export function labelValueOf(id: string): string {
  return isLabelValue(id) ? id : `sha256-${createHash("sha256").update(id).digest("hex").slice(0, 48)}`;
}
