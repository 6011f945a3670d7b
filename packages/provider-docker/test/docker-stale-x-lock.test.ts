import { describe, expect, it } from "vitest";
import { dockerTestEnvironment, sharedDisplayComputer } from "./docker-test-environment.js";

// A machine that stopped leaves its X locks in /tmp; after its restart the
// pids they name belong to other programs, or to zombies. X takes any pid
// that answers a signal as the display's holder, so the desktop runtime
// must not leave such a lock in the way of its own X server (issue 47: a
// resumed computer's desktop failed with "Server is already active for
// display 101"). The shared display (displayContainer: false), so the
// bot's commands and the X servers share /tmp, as on a restarted machine.
const env = await dockerTestEnvironment("docker: a stale X lock from before a stop");
if (!env.missing) {
  describe("docker: a stale X lock from before a stop", () => {
    const { machine, sh } = sharedDisplayComputer(env, "stale-x");

    it("starts the desktop on a display whose lock names a zombie, and on one whose lock names a live program", async () => {
      // A zombie: the child of a parent that never reaps it. The child outlives
      // the shell's exec (a child that ended before it, the shell reaped: the
      // hunt of issue 40 saw its pid gone), then the check waits for its end.
      // Then a live program that is no X server.
      const zombie = await sh(
        "setsid nohup sh -c 'sleep 2 & echo $! > /tmp/zombie.pid; exec sleep 600' >/dev/null 2>&1 < /dev/null & for i in $(seq 50); do [ -s /tmp/zombie.pid ] && break; sleep 0.1; done; cat /tmp/zombie.pid",
      );
      expect(
        await sh(
          `for i in $(seq 50); do s=$(cut -d' ' -f3 /proc/${zombie}/stat); [ "$s" = Z ] && break; sleep 0.2; done; echo $s`,
        ),
      ).toBe("Z");
      const live = await sh("setsid nohup sleep 600 >/dev/null 2>&1 < /dev/null & echo $!");
      // The first two displays, as the first two desktops take them.
      await sh(`printf '%10d\\n' ${zombie} > /tmp/.X100-lock && printf '%10d\\n' ${live} > /tmp/.X101-lock`);

      for (const bot of ["first", "second"]) {
        const desktop = await machine().openDesktop?.(bot);
        if (!desktop) throw new Error("no desktop");
        const frame = await desktop.observe();
        expect(frame.image?.byteLength).toBeGreaterThan(0);
      }
      // Both X servers hold the displays the locks were left on.
      const holders = await sh("for d in 100 101; do cat /proc/$(tr -d ' ' < /tmp/.X$d-lock)/comm; done");
      expect(holders.split("\n")).toEqual(["Xvfb", "Xvfb"]);
    }, 180_000);
  });
}
