import { existsSync } from "node:fs";
import type { DesktopSession, Machine, SandboxProvider } from "@agent-computer/core";
import { SCREEN_GATEWAY_PORT } from "@agent-computer/desktop-runtime";
import { RfbTestClient } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostProvider } from "../src/host-provider.js";
import { hostTestEnvironment } from "./host-test-environment.js";

// Screens of host computers through the screen gateway: two computers on
// one host, each with its own gateway on a loopback port of its own, each
// serving its own bot's screen as RFB at that desktop's size; no terminal.
const env = await hostTestEnvironment("host computers: screens", "private");
if (!env.missing) {
  describe("host computers: screens", () => {
    let provider: SandboxProvider;
    const machines: Machine[] = [];
    const desktops: DesktopSession[] = [];
    const clients: RfbTestClient[] = [];

    beforeAll(async () => {
      provider = hostProvider(await env.options());
      for (const [name, width] of [
        ["screens-a", 1024],
        ["screens-b", 800],
      ] as const) {
        const machine = await provider.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
        machines.push(machine);
        const desktop = await machine.openDesktop?.("viewer", undefined, { screen: { width, height: 600 } });
        desktops.push(desktop as DesktopSession);
      }
    }, 120_000);
    afterAll(async () => {
      for (const client of clients) client.close();
      for (const machine of machines) await machine.destroy().catch(() => {});
    }, 60_000);

    it("each computer's gateway has a loopback port of its own and serves its own screen", async () => {
      const [a, b] = machines as [Machine, Machine];
      const ports = await Promise.all(
        [a, b].map(
          async (m) =>
            new URL(await (m.portUrl as NonNullable<Machine["portUrl"]>)(SCREEN_GATEWAY_PORT, { private: true })).port,
        ),
      );
      expect(ports[0]).not.toBe(ports[1]);
      for (const [i, width] of [1024, 800].entries()) {
        const endpoint = await (desktops[i] as DesktopSession).screenEndpoint("view");
        expect(endpoint.url).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:${ports[i]}/screens/`));
        const client = await RfbTestClient.open(endpoint);
        clients.push(client);
        const init = await client.handshake();
        expect({ width: init.width, height: init.height }).toEqual({ width, height: 600 });
        expect(await client.requestUpdate()).toBe(0);
      }
    }, 60_000);

    it("stop ends the computer's X server and removes the lock it leaves, so the display is free for any user", async () => {
      const display = (desktops[1] as DesktopSession).display.slice(1);
      expect(existsSync(`/tmp/.X${display}-lock`)).toBe(true);
      await (machines[1] as Machine).stop();
      expect(existsSync(`/tmp/.X${display}-lock`)).toBe(false);
      expect(existsSync(`/tmp/.X11-unix/X${display}`)).toBe(false);
    });

    it("offers no terminal: a person at a host computer has the machine's own", () => {
      expect(provider.capabilities.terminal).toBe(false);
      expect((desktops[0] as DesktopSession).terminalEndpoint).toBeUndefined();
      expect("terminalEndpoint" in (desktops[0] as DesktopSession)).toBe(false);
    });
  });
}
