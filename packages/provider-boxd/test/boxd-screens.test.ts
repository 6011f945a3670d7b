import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, pointerAfterTakeoverThroughExec, refusalOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boxdTestEnvironment } from "./boxd-test-environment.js";

// Screens reach the computer's screen gateway through the machine's public
// URL, which carries requests and websocket upgrades to its port 8000 with
// no authentication of its own (docs.boxd.sh control-plane, "Managing
// proxies"): the gateway listens on 8000 and its token is what lets a
// viewer in.
const env = await boxdTestEnvironment("boxd: screens through the public URL");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;

  describe("boxd: screens through the public URL", () => {
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

    it("serves a view capability as RFB over the public URL; without the gateway's token it is refused", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const publicUrl = new URL(env.emulator.publicUrlOf(machine.ref.slice("boxd:".length)));
      expect(new URL(endpoint.url).host).toBe(publicUrl.host);
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
      // The public URL lets anyone through; the gateway refuses a connection without its token,
      expect((await refusalOf(endpoint.url)).status).toBe(401);
      // and answers nothing but refusals to a plain request at the URL's root.
      const root = await fetch(publicUrl);
      expect(root.status).toBe(404);
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
