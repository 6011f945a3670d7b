import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, refusalOf } from "@agent-computer/testing/provider-test";
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
  });
}
