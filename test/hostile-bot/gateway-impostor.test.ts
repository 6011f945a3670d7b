import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Machine } from "@agent-computer/core";
import type { LeaseEngine } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createScreens, runtimeScreenAuthority, type ScreenEvent } from "@agent-computer/screens";
import {
  chooseTestProvider,
  impostorHeard,
  startImpostorGateway,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";

// Issue 21, finding 4 (the part about tokens): a bot killed the screen
// gateway, listened on its port and received the next connection with its
// bearer token. The screens proxy now asks the gateway to prove it holds
// the capability (core's gateway-proof.ts) before it sends anything: the
// bot's listener gets a proof it cannot use, no token and no frame of the
// person's, and the person's viewer is refused instead of shown a fake
// screen.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: gateway impostor",
);

if (!env.missing) {
  describe("hostile bot: gateway impostor", () => {
    const machines: Machine[] = [];
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    it("gives a bot that took the gateway's port neither the token nor the person's input", async () => {
      // The shared display (displayContainer: false), where this defence is what holds: with the
      // default display container the bot's container has no gateway, relay or X server at all
      // (docker-display-container.test.ts).
      const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer: false });
      const machine = await provider.provision({ computerId: "impostor", homeKey: `impostor-${Date.now()}` });
      machines.push(machine);
      const desktop = await machine.openDesktop?.("bot-1");
      if (!desktop) throw new Error("no desktop");
      const tokens: string[] = [];
      const events: ScreenEvent[] = [];
      const screens = createScreens({
        authority: runtimeScreenAuthority({
          // View capabilities only ask whether the computer still exists.
          leases: {
            getComputer: async () => ({}) as Awaited<ReturnType<LeaseEngine["getComputer"]>>,
            assertCurrent: async () => {},
          } as unknown as Pick<LeaseEngine, "assertCurrent" | "getComputer">,
          on: () => () => {},
          desktopFor: async () =>
            new Proxy(desktop, {
              get: (target, key) =>
                key === "screenEndpoint"
                  ? async (...args: Parameters<NonNullable<typeof desktop.screenEndpoint>>) => {
                      const endpoint = await target.screenEndpoint?.(...args);
                      if (endpoint) tokens.push(endpoint.token);
                      return endpoint;
                    }
                  : Reflect.get(target, key),
            }),
        }),
        secret: randomBytes(32),
        onEvent: (event) => events.push(event),
      });
      const server = createServer();
      server.on("upgrade", (req, socket, head) => screens.handleUpgrade(req, socket, head) || socket.destroy());
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const viewer = (path: string) =>
        new Promise<{ opened: boolean; status?: number }>((resolve) => {
          const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
          ws.once("open", () => {
            ws.close();
            resolve({ opened: true });
          });
          ws.once("unexpected-response", (_req, res) => resolve({ opened: false, status: res.statusCode ?? 0 }));
          ws.on("error", () => {});
        });
      try {
        // The real gateway first: the viewer connects through the proof.
        const before = await screens.issueScreenCapability({
          computerId: "c",
          botId: "bot-1",
          mode: "view",
          ttlMs: 60_000,
        });
        expect(await viewer(before.url)).toEqual({ opened: true });
        // Granted while the real gateway ran; then the bot takes its port.
        const capability = await screens.issueScreenCapability({
          computerId: "c",
          botId: "bot-1",
          mode: "view",
          ttlMs: 60_000,
        });
        await startImpostorGateway(machine);
        expect(await viewer(capability.url)).toEqual({ opened: false, status: 502 });
        expect(events.filter((e) => e.type === "screen.proxy.websocket_handshake_failed").at(-1)).toMatchObject({
          reason: "upstream_unproven",
        });
        const heard = await impostorHeard(machine);
        expect(heard).toContain("AgentComputer nonce=");
        expect(heard).not.toContain("MSG ");
        expect(tokens).toHaveLength(2);
        for (const token of tokens) expect(heard).not.toContain(token);
      } finally {
        await screens.close();
        server.closeAllConnections();
        server.close();
      }
    }, 120_000);
  });
}
