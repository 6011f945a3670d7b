import { describe, expect, it } from "vitest";
import { strengthCheck } from "../src/soak-checks.js";

// The strength CI asks of the soak (.ci/run): a soak that ran shorter runs
// or committed fewer checkpoints than asked fails, whatever else passed.
describe("soak strength check", () => {
  const asked = { minRunTtls: 100, minCheckpoints: 3 };

  it("passes when every run and the checkpoint count reach what was asked", () => {
    const check = strengthCheck({ runTtls: [104.2, 100, 131.5], committedCheckpoints: 3, ...asked });
    expect(check).toMatchObject({ ok: true, enforced: true, judged: true });
    expect(check.detail).toBe("3 runs, shortest 100 TTLs; 3 checkpoints committed");
  });

  it("fails on one run shorter than asked", () => {
    expect(strengthCheck({ runTtls: [120, 99.9, 130], committedCheckpoints: 3, ...asked }).ok).toBe(false);
  });

  it("fails on too few committed checkpoints", () => {
    expect(strengthCheck({ runTtls: [120, 130], committedCheckpoints: 2, ...asked }).ok).toBe(false);
  });

  it("fails a soak that ran no run at all", () => {
    expect(strengthCheck({ runTtls: [], committedCheckpoints: 3, ...asked }).ok).toBe(false);
  });

  it("is not judged when nothing was asked", () => {
    expect(strengthCheck({ runTtls: [], committedCheckpoints: 0, minRunTtls: 0, minCheckpoints: 0 })).toMatchObject({
      ok: true,
      judged: false,
    });
  });
});
