import { request } from "node:http";
import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, refusalOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// Screens reach the computer's screen gateway (port 6080) through portUrl:
// the emulator's port proxy carries the websocket upgrade to the container,
// and `Host: <port>-<id>.<domain>` routes plain HTTP the way E2B's edge does.
const env = await e2bTestEnvironment("e2b: screens through portUrl");
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider();
  let machine: Machine;
  let desktop: LinuxDesktopSession;
  const idOf = (m: Machine) => m.ref.slice("e2b:".length);

  const statusVia = (host: string, path: string) =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(emulator.apiUrl);
      request({ host: url.hostname, port: url.port, path, headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on("error", reject)
        .end();
    });

  describe("e2b: screens through portUrl", () => {
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

    it("serves a view capability as RFB over the proxied websocket, at the desktop's size", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const base = new URL(emulator.portUrl(idOf(machine), 6080));
      expect(new URL(endpoint.url).host).toBe(base.host);
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
      // The gateway's own token guards it: E2B's traffic token is never what lets a viewer in.
      expect((await refusalOf(endpoint.url)).status).toBe(401);
    }, 60_000);

    it("routes Host: <port>-<id>.<domain> to the container's port", async () => {
      const endpoint = await desktop.screenEndpoint("view");
      const path = new URL(endpoint.url).pathname;
      // Reaches the gateway, which wants a websocket there (426): not the control plane, which would say 401 or 404 in JSON.
      expect(await statusVia(`6080-${idOf(machine)}.${emulator.domain}`, path)).toBe(426);
      expect(await statusVia(`6080-${idOf(machine)}.${emulator.domain}`, "/no-such-path")).toBe(404);
    }, 30_000);
  });
}
