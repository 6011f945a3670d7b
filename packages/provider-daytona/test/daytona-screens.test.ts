import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { RfbTestClient } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PREVIEW_TOKEN_PARAM } from "../src/testing/index.js";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// Ports through signed preview URLs: the emulator's preview proxy carries
// plain HTTP and websocket upgrades to the container's port, and only with
// the URL's token. Screens reach the screen gateway (port 6080) that way,
// the token kept in the URL's query string.
const env = await daytonaTestEnvironment("daytona: ports and screens through signed preview URLs");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const portUrl = (port: number) => (machine.portUrl as NonNullable<Machine["portUrl"]>)(port, { private: true });

  describe("daytona: ports and screens through signed preview URLs", () => {
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

    it("serves a view capability as RFB over the proxied websocket, the preview token kept", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const url = new URL(endpoint.url);
      expect(url.searchParams.get(PREVIEW_TOKEN_PARAM)).toMatch(/^[0-9a-f]{32}$/);
      const client = await RfbTestClient.open(endpoint);
      try {
        const init = await client.handshake();
        expect(init.banner).toBe("RFB 003.008\n");
        expect({ width: init.width, height: init.height }).toEqual({ width: 1024, height: 640 });
        expect(await client.requestUpdate()).toBe(0);
      } finally {
        client.close();
      }
    }, 60_000);

    it("reaches a port's HTTP server with the URL's token, and refuses without it", async () => {
      await machine.files.write("site/hello.txt", new TextEncoder().encode("hello through the preview"));
      await machine.exec({
        shell: "cd site && setsid nohup python3 -m http.server 8080 --bind 0.0.0.0 >/dev/null 2>&1 < /dev/null &",
      });
      const signed = new URL(await portUrl(8080));
      const file = new URL(signed);
      file.pathname = "/hello.txt";
      await expect.poll(async () => (await fetch(file).catch(() => undefined))?.status, { timeout: 15_000 }).toBe(200);
      expect(await (await fetch(file)).text()).toBe("hello through the preview");
      const without = new URL(file);
      without.searchParams.delete(PREVIEW_TOKEN_PARAM);
      expect((await fetch(without)).status).toBe(401);
      const forged = new URL(file);
      forged.searchParams.set(PREVIEW_TOKEN_PARAM, "0".repeat(32));
      expect((await fetch(forged)).status).toBe(401);
      // A token signs one port: the gateway's token does not open 8080.
      const gateway = new URL(await portUrl(6080));
      const crossed = new URL(file);
      crossed.searchParams.set(PREVIEW_TOKEN_PARAM, gateway.searchParams.get(PREVIEW_TOKEN_PARAM) as string);
      expect(await (await fetch(crossed)).text()).not.toBe("hello through the preview");
    }, 60_000);
  });
}
