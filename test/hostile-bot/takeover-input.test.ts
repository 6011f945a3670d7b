import { spawnSync } from "node:child_process";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, RfbTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
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
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    /** A person takes control, puts the pointer at (400, 300) while the bot's loop runs, and reads where it is 2 s later. */
    const pointerAfterTakeover = async (displayContainer: boolean) => {
      const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer });
      const machine = await provider.provision({
        computerId: `takeover-${displayContainer ? "apart" : "shared"}`,
        homeKey: `takeover-${displayContainer}-${Date.now()}`,
      });
      machines.push(machine);
      const desktop = (await machine.openDesktop?.("bot-1")) as LinuxDesktopSession;
      // The bot, steered by a prompt injection, leaves this running before it asks for the takeover.
      const loop = `nohup sh -c 'while true; do DISPLAY=${desktop.display} xdotool mousemove 5 5 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 &`;
      const started = spawnSync("docker", [
        "exec",
        "-u",
        "1000",
        machine.ref.slice("docker:".length),
        "sh",
        "-c",
        loop,
      ]);
      expect(started.status).toBe(0);
      const control = await RfbTestClient.open(await desktop.screenEndpoint("control"));
      try {
        await control.handshake();
        for (let i = 0; i < 10; i++) {
          control.pointer(400, 300);
          await sleep(100);
        }
        await sleep(2000);
        return (await desktop.observe(undefined, { includeImage: false })).cursor;
      } finally {
        control.close();
      }
    };

    it("loses the person's pointer to the bot's loop on a display the bot shares (displayContainer: false)", async () => {
      expect(await pointerAfterTakeover(false)).toEqual({ x: 5, y: 5 });
    }, 180_000);

    it("keeps the person's pointer where they put it when the display runs in its own container (the default)", async () => {
      expect(await pointerAfterTakeover(true)).toEqual({ x: 400, y: 300 });
    }, 180_000);
  });
}
