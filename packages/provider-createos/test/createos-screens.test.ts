import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, pointerAfterTakeoverThroughExec, refusalOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createosTestEnvironment } from "./createos-test-environment.js";

// Screens reach the computer's screen gateway (port 6080) through the
// sandbox's public ingress URL: the ingress carries the websocket upgrade
// to the VM with no authentication of its own (the SDK's
// docs/how-to/expose-a-service.md), so the gateway's token is what lets a
// viewer in.
const env = await createosTestEnvironment("createos: screens through the ingress URL");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const idOf = (m: Machine) => m.ref.slice("createos:".length);

  describe("createos: screens through the ingress URL", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "screens", homeKey: `screens-${Date.now()}` });
      desktop = (await machine.openDesktop?.("viewer", undefined, {
        screen: { width: 1024, height: 640 },
      })) as LinuxDesktopSession;
    }, 120_000);
    afterAll(async () => {
      await desktop?.release().catch(() => {});
      await machine?.destroy();
    });

    it("serves a view capability as RFB over the ingress websocket; without the gateway's token it is refused", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      expect(new URL(endpoint.url).pathname.startsWith(`/${idOf(machine)}-6080/`)).toBe(true);
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
      // The ingress lets anyone through; the gateway's own token guards the screen.
      expect((await refusalOf(endpoint.url)).status).toBe(401);
    }, 60_000);

    // Holds this package's README ("The display and the bot's user", issue 45) to the emulator:
    // the display runs under the bot's user, so a pointer loop the bot left running, started
    // through the machine's exec as the bot's commands are, takes the pointer back from a person
    // in control (pointerAfterTakeover). Last here: the loop runs until the machine ends.
    it("loses a person's pointer during a takeover to a loop the bot left running (the display shares the bot's user)", async () => {
      expect(await pointerAfterTakeoverThroughExec(machine, desktop)).toEqual({ x: 5, y: 5 });
    }, 60_000);
  });
}
