import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { expectRfbScreen, pointerAfterTakeoverThroughExec } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PREVIEW_DOMAIN, parsePreviewHost } from "../src/testing/index.js";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// Ports through signed preview URLs: the emulator's preview proxy carries
// plain HTTP and websocket upgrades to the container's port, and only with
// the URL's token. Signed URLs are in host form, `https://<port>-<token>.
// <proxy domain>` (daytona apps/api sandbox.service.ts getSignedPortPreviewUrl);
// the tests reach them through the emulator's tunnel, which sends that host.
// Screens reach the screen gateway (port 6080) that way.
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
      const host = env.emulator.previewHostOf(endpoint.url) ?? "";
      expect(host).toMatch(new RegExp(`^6080-[a-z0-9]{16}\\.${PREVIEW_DOMAIN.replaceAll(".", "\\.")}$`));
      await expectRfbScreen(endpoint, { width: 1024, height: 640 });
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
      // No valid token for the port: the proxy sends the browser to its login (apps/proxy auth.go Authenticate: 307).
      const tokenOf = (url: string) => parsePreviewHost(env.emulator.previewHostOf(url) ?? "")?.idOrToken as string;
      const refused = async (label: string) => {
        const tunnel = await env.emulator.previewTunnel(`https://8080-${label}.${PREVIEW_DOMAIN}/hello.txt`);
        const answer = await fetch(tunnel, { redirect: "manual" });
        return { status: answer.status, location: answer.headers.get("location") ?? "" };
      };
      const sandboxId = machine.ref.slice("daytona:".length);
      // The sandbox's id instead of a token (a private sandbox), a forged token, and the gateway's token (signed for 6080).
      const gatewayToken = tokenOf(await portUrl(6080));
      for (const label of [sandboxId, "0".repeat(16), gatewayToken]) {
        const answer = await refused(label);
        expect(answer.status).toBe(307);
        expect(answer.location).toMatch(/\/authorize\?/);
      }
      expect(tokenOf(signed.href)).not.toBe(gatewayToken);
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
