import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ComputerEvent, DesktopSession } from "@agent-computer/core";
import { LeaseEngine, MemoryLeaseStore } from "@agent-computer/core/lease";
import { expect, it } from "vitest";
import { WebSocket } from "ws";
import { createScreens, runtimeScreenAuthority, type ScreenEvent, type ScreenRuntime } from "../src/index.js";
import { FakeGateway } from "./fake-gateway.js";
import { closed, eventually, opened } from "./harness.js";

// The whole chain for control: a takeover lease, runtimeScreenAuthority, the
// proxy and the (fake) gateway. Ending the takeover closes the socket at
// once, through the runtime's takeover-ended event, not the periodic check.

it("closes a control socket as soon as the takeover is released", async () => {
  const gateway = await new FakeGateway().start();
  const leases = new LeaseEngine(new MemoryLeaseStore());
  const listeners = new Set<(event: ComputerEvent) => void>();
  const runtime: ScreenRuntime = {
    leases,
    on: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    desktopFor: async ({ botId }) =>
      ({
        botId,
        display: ":100",
        screenEndpoint: async (mode: "view" | "control") => gateway.endpoint(mode),
        revokeEndpoint: async (id: string) => gateway.revoke(id),
      }) as unknown as DesktopSession,
  };
  const events: ScreenEvent[] = [];
  const screens = createScreens({
    authority: runtimeScreenAuthority(runtime),
    secret: randomBytes(32),
    onEvent: (event) => events.push(event),
    controlCheckIntervalMs: 60_000,
  });
  const server = createServer();
  server.on("upgrade", (req, socket, head) => screens.handleUpgrade(req, socket, head) || socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    const capability = await screens.issueScreenCapability({
      computerId: "team-1",
      botId: "bot-1",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${capability.url}`);
    await opened(ws);
    // What ComputerRuntime.releaseTakeover does: release, then report.
    const start = performance.now();
    await leases.release(control);
    for (const listener of listeners)
      listener({
        type: "takeover-ended",
        computerId: "team-1",
        at: Date.now(),
        durationMs: 0,
        detail: { botId: "bot-1" },
      });
    expect((await closed(ws)).reason).toBe("revoked");
    expect(performance.now() - start).toBeLessThan(500);
    expect(await eventually(() => events.find((e) => e.type === "screen.proxy.websocket_closed"))).toMatchObject({
      closer: "revoked",
      policy: { mode: "control", computerId: "team-1", botId: "bot-1" },
    });
    // A new socket on the same capability is refused now.
    const again = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${capability.url}`);
    await expect(opened(again)).rejects.toMatchObject({ status: 403 });
  } finally {
    await screens.close();
    server.closeAllConnections();
    server.close();
    await gateway.stop();
  }
});
