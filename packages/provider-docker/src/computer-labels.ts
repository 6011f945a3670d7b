/**
 * The labels every computer container carries are core's one set
 * (`COMPUTER_LABELS`): `list` finds only this project's machines by
 * `managed`, and a person reading `docker ps` sees which computer and home a
 * container serves. Docker takes any label value, so the ids sit in them as
 * they are.
 */
export { COMPUTER_LABELS } from "@agent-computer/core";

/**
 * A computer with its display in a container of its own
 * (`displayContainer`) names that container in `displayContainer`; the
 * display's container names the computer it serves in `displayOf` and is
 * never `managed`, so `list` and `reconnect` never take it for a computer.
 * The computer names the network the two share in `displayNetwork`; that
 * network carries `pairNetwork` (display-network.ts).
 */
export const DISPLAY_LABELS = {
  displayContainer: "agent-computer.org/display-container",
  displayOf: "agent-computer.org/display-of",
  displayNetwork: "agent-computer.org/display-network",
  pairNetwork: "agent-computer.org/display-pair-network",
} as const;
