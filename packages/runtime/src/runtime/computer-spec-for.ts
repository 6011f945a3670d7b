import type { ComputerSpec } from "@agent-computer/core";
import { COMPUTER_LABELS, labelValueOf } from "@agent-computer/core";
import type { ComputerRecord } from "@agent-computer/leases";
import { scopeOf } from "@agent-computer/leases";
import type { ComputerRuntimeOptions } from "./computer-runtime-options.js";

/** What every machine of a runtime gets: its configured spec, Team screen cap and deployment labels. */
export interface MachineDefaults {
  readonly spec: ComputerRuntimeOptions["spec"];
  /** Most active desktops on a Team computer; 0 = no cap. */
  readonly teamScreenLimit: number;
  readonly deploymentLabels: Readonly<Record<string, string>>;
  readonly egressFor?: ComputerRuntimeOptions["egressFor"];
}

/**
 * What to provision for the record's computer, by the scope its record
 * keeps: a Team computer gets the screen cap, a Private one no cap and its
 * bot's label. Label values fit Kubernetes (`labelValueOf`).
 */
export function computerSpecFor(record: ComputerRecord, defaults: MachineDefaults): ComputerSpec {
  const scope = scopeOf(record);
  const { spec } = defaults;
  const egress = defaults.egressFor?.(scope) ?? spec?.egress;
  return {
    computerId: record.computerId,
    homeKey: record.homeKey,
    ...(spec?.image ? { image: spec.image } : {}),
    ...(spec?.resources ? { resources: spec.resources } : {}),
    ...(egress ? { egress } : {}),
    screenLimit: scope.kind === "team" ? defaults.teamScreenLimit : 0,
    labels: {
      ...spec?.labels,
      ...defaults.deploymentLabels,
      [COMPUTER_LABELS.computerId]: labelValueOf(record.computerId),
      ...(scope.kind === "private" ? { [COMPUTER_LABELS.botId]: labelValueOf(scope.botId) } : {}),
    },
  };
}
