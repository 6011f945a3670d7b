import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, refusalOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// Screens reach the computer's screen gateway (port 6080) through the
// service's public domain for that port (serviceDomainCreate with
// targetPort), routed by the emulator on loopback to the running
// deployment's container. The domain is public: the gateway's own tokens
// are what guard it. Other ports get their own domain.
const env = await railwayTestEnvironment("railway: screens through public domains");
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const portUrl = (port: number) => (machine.portUrl as NonNullable<Machine["portUrl"]>)(port, { private: true });

  describe("railway: screens through public domains", () => {
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

    it("serves a view capability as RFB over the domain's websocket, at the desktop's size; the gateway's token is required", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const service = emulator.services.get(machine.ref.slice("railway:".length));
      const gateway = service?.domains.find((d) => d.targetPort === 6080);
      expect(gateway?.domain).toMatch(/^ac1-[a-z0-9-]+\.up\.railway\.app$/);
      expect(new URL(endpoint.url).host).toBe(new URL(gateway?.url as string).host);
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
      expect((await refusalOf(endpoint.url)).status).toBe(401);
      expect(emulator.routed.some((line) => line.startsWith(`${gateway?.domain} `))).toBe(true);
    }, 60_000);

    it("gives another port its own domain, kept for later calls", async () => {
      await machine.files.write("site/hello.txt", new TextEncoder().encode("hello through the domain"));
      await machine.exec({
        shell: "cd site && setsid nohup python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 < /dev/null &",
      });
      const url = new URL(await portUrl(8080));
      url.pathname = "/hello.txt";
      await expect.poll(async () => (await fetch(url).catch(() => undefined))?.status, { timeout: 15_000 }).toBe(200);
      expect(await (await fetch(url)).text()).toBe("hello through the domain");
      expect(await portUrl(8080)).toBe(await portUrl(8080));
      const domains = emulator.services.get(machine.ref.slice("railway:".length))?.domains ?? [];
      expect(domains.map((d) => d.targetPort).sort()).toEqual([6080, 8080]);
    }, 60_000);
  });
}
