import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { displayContainerName, dockerTestEnvironment } from "./docker-test-environment.js";

// A desktop whose teardown fails keeps its display slot reserved for a
// retry (docs/architecture.md §4, "Screen gateway"): no other bot gets its
// display number until the retry succeeds, though its X server is gone.
// The failure is planted: a process the desktop's user (uid 1000) cannot
// signal, started as uid 0 in the display's container, stands in for the
// desktop's window manager in its slot record, as a process that will not
// die would. Nothing else is faked; the default Docker computer.
const STATE = "/tmp/agent-computer-desktops";
const env = await dockerTestEnvironment("docker: a failed desktop teardown");
if (!env.missing) {
  const provider = env.provider({ dataDir: await temporaryDataDir() });
  let machine: Machine;
  let displayContainer: string;
  let planted: number | undefined;
  /** Runs `script` as `user` in the display's container: the test's hand, not the bot's. */
  const inDisplay = (user: "0" | "1000", script: string) => {
    const run = spawnSync("docker", ["exec", "-u", user, displayContainer, "bash", "-ec", script], {
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    return run.stdout.trim();
  };
  const open = async (bot: string) => (await machine.openDesktop?.(bot)) as LinuxDesktopSession;

  describe("docker: a failed desktop teardown", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "teardown", homeKey: `teardown-${Date.now()}` });
    }, 120_000);
    afterAll(async () => {
      if (planted !== undefined) spawnSync("docker", ["exec", "-u", "0", displayContainer, "kill", String(planted)]);
      await machine?.destroy();
    });

    it("keeps the display slot of a failed teardown from other bots until the retry frees it", async () => {
      const alpha = await open("alpha");
      expect(alpha.display).toBe(":100");
      displayContainer = (await displayContainerName(env.docker, machine)) ?? "";
      expect(displayContainer).not.toBe("");

      // Root in the display's container (without capabilities: it cannot read the desktops' state,
      // but uid 1000 cannot signal it either); the desktop's own user points the record at it.
      planted = Number(inDisplay("0", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!"));
      inDisplay(
        "1000",
        `python3 - ${planted} <<'EOF'
import json, sys
pid = int(sys.argv[1])
stat = open(f"/proc/{pid}/stat").read()
start = stat[stat.rindex(")") + 2:].split(" ")[19]
path = "${STATE}/slot-0.json"
record = json.load(open(path))
record["windowManager"] = {"pid": pid, "startTime": start}
with open(path, "w") as out:
    json.dump(record, out)
EOF`,
      );
      expect(planted).toBeGreaterThan(1);

      await expect(alpha.release()).rejects.toMatchObject({
        code: "UNAVAILABLE",
        message: expect.stringContaining("its slot stays reserved, try again"),
      });
      const reserved = JSON.parse(inDisplay("1000", `cat ${STATE}/slot-0.json`));
      expect(reserved).toMatchObject({ bot: "alpha", slot: 0, status: "stopping" });
      expect(reserved.lastError).toContain(String(planted));
      // The display itself is free (X stopped): only the reservation keeps it from the next bot.
      expect(inDisplay("1000", "pgrep -x Xvfb || true")).toBe("");

      const beta = await open("beta");
      expect(beta.display).toBe(":101");

      // The stuck process ends; the retry frees the slot and the next bot gets its display.
      inDisplay("0", `kill -9 ${planted}`);
      planted = undefined;
      await alpha.release();
      expect(inDisplay("1000", `ls ${STATE}`).split("\n")).not.toContain("slot-0.json");
      const gamma = await open("gamma");
      expect(gamma.display).toBe(":100");
      expect((await gamma.observe(undefined, { includeImage: false })).width).toBeGreaterThan(0);
    }, 240_000);
  });
}
