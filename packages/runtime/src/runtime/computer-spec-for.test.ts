import type { ComputerRecord } from "@agent-computer/leases";
import { describe, expect, it } from "vitest";
import { computerSpecFor, type MachineDefaults } from "./computer-spec-for.js";

const record = (scope: ComputerRecord["scope"]): ComputerRecord =>
  ({ computerId: "c-1", homeKey: "h-1", scope }) as unknown as ComputerRecord;
const base: MachineDefaults = { spec: undefined, teamScreenLimit: 2, deploymentLabels: {} };

describe("computerSpecFor and egress policies", () => {
  it("asks for no policy where none is configured (the provider's default)", () => {
    expect(computerSpecFor(record({ kind: "team" }), base)).not.toHaveProperty("egress");
  });

  it("gives every computer the runtime's spec.egress, and a bot's own policy from egressFor over it", () => {
    const defaults: MachineDefaults = {
      ...base,
      spec: { egress: { name: "deployment", allow: ["example.com"] } },
      egressFor: (scope) =>
        scope.kind === "private" && scope.botId === "ci-bot" ? { name: "ci", allow: ["*.github.com"] } : undefined,
    };
    expect(computerSpecFor(record({ kind: "team" }), defaults).egress).toEqual({
      name: "deployment",
      allow: ["example.com"],
    });
    expect(computerSpecFor(record({ kind: "private", botId: "ci-bot" }), defaults).egress).toEqual({
      name: "ci",
      allow: ["*.github.com"],
    });
    expect(computerSpecFor(record({ kind: "private", botId: "other" }), defaults).egress?.name).toBe("deployment");
  });
});
