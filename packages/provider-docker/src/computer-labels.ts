/**
 * The labels every computer container carries are core's one set
 * (`COMPUTER_LABELS`): `list` finds only this project's machines by
 * `managed`, and a person reading `docker ps` sees which computer and home a
 * container serves. Docker takes any label value, so the ids sit in them as
 * they are.
 */
export { COMPUTER_LABELS } from "@agent-computer/core";
