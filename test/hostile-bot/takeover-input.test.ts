import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, pointerAfterTakeover, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 21, finding 4 (the part about input): during a person's takeover, a
// background xdotool loop the bot left running moved the pointer away from
// where the person put it. With the display in its own container (the
// Docker provider's default, displayContainer: true, docs/architecture.md
// §4) the same loop, started the same way, never reaches the display and
// the person's pointer stays put. A shared display (displayContainer:
// false, the default until this fix) still loses the pointer: the first case
// shows the attack is real, so the second one proves something.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: takeover input",
);

if (!env.missing) {
  describe("hostile bot: takeover input", () => {
    const machines: Machine[] = [];
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    /** The bot's pointer loop, then a person's control (pointerAfterTakeover): where the pointer ends. */
    const pointerAfterTakeoverOn = async (displayContainer: boolean) => {
      const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer });
      const machine = await provider.provision({
        computerId: `takeover-${displayContainer ? "apart" : "shared"}`,
        homeKey: `takeover-${displayContainer}-${Date.now()}`,
      });
      machines.push(machine);
      const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      const container = machine.ref.slice("docker:".length);
      return pointerAfterTakeover(
        desktop,
        desktop.display,
        (line) => spawnSync("docker", ["exec", "-u", "1000", container, "sh", "-c", line]).status,
      );
    };

    it("loses the person's pointer to the bot's loop on a display the bot shares (displayContainer: false)", async () => {
      expect(await pointerAfterTakeoverOn(false)).toEqual({ x: 5, y: 5 });
    }, 180_000);

    it("keeps the person's pointer where they put it when the display runs in its own container (the default)", async () => {
      expect(await pointerAfterTakeoverOn(true)).toEqual({ x: 400, y: 300 });
    }, 180_000);
  });
}
