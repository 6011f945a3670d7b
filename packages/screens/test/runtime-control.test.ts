import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { DesktopSession } from "@agent-computer/core";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import type { ComputerEvent } from "@agent-computer/runtime";
import { expect, it } from "vitest";
import { WebSocket } from "ws";
import { createScreens, runtimeScreenAuthority, type ScreenEvent, type ScreenRuntime } from "../src/index.js";
import { FakeGateway } from "./fake-gateway.js";
import { closed, eventually, opened } from "./harness.js";

// The whole chain for control: a takeover lease, runtimeScreenAuthority, the
// proxy and the (fake) gateway. Ending the takeover closes the socket at
// once, through the runtime's takeover-ended event, not the periodic check.

async function chain() {
  const gateway = await new FakeGateway().start();
  const leases = new LeaseEngine(new MemoryStateStore());
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
        terminalEndpoint: async (_ctx: unknown, opts: { ttlMs?: number; controlId?: string }) =>
          gateway.terminalEndpoint(opts.ttlMs, opts.controlId),
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
  return {
    gateway,
    leases,
    screens,
    events,
    connect: (path: string) => new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}${path}`),
    /** What ComputerRuntime.releaseTakeover does: release, then report. */
    async releaseTakeover(control: Awaited<ReturnType<LeaseEngine["takeover"]>>) {
      await leases.release(control);
      for (const listener of listeners)
        listener({
          type: "takeover-ended",
          computerId: "team-1",
          at: Date.now(),
          durationMs: 0,
          detail: { botId: "bot-1" },
        });
    },
    async stop() {
      await screens.close();
      server.closeAllConnections();
      server.close();
      await gateway.stop();
    },
  };
}

it("closes a control socket as soon as the takeover is released", async () => {
  const c = await chain();
  try {
    const control = await c.leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    const capability = await c.screens.issueScreenCapability({
      computerId: "team-1",
      botId: "bot-1",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const ws = c.connect(capability.url);
    await opened(ws);
    const start = performance.now();
    await c.releaseTakeover(control);
    expect((await closed(ws)).reason).toBe("revoked");
    expect(performance.now() - start).toBeLessThan(500);
    expect(await eventually(() => c.events.find((e) => e.type === "screen.proxy.websocket_closed"))).toMatchObject({
      closer: "revoked",
      policy: { mode: "control", computerId: "team-1", botId: "bot-1" },
    });
    // A new socket on the same capability is refused now.
    await expect(opened(c.connect(capability.url))).rejects.toMatchObject({ status: 403 });
  } finally {
    await c.stop();
  }
});

it("opens a terminal under the control screen and closes both as soon as the takeover is released", async () => {
  const c = await chain();
  try {
    const control = await c.leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    const screen = await c.screens.issueScreenCapability({
      computerId: "team-1",
      botId: "bot-1",
      mode: "control",
      ttlMs: 60_000,
      control,
    });
    const terminal = await c.screens.issueTerminalCapability({
      computerId: "team-1",
      botId: "bot-1",
      ttlMs: 60_000,
      control,
    });
    expect(terminal.screenCapabilityId).toBe(screen.id);
    const screenSocket = c.connect(screen.url);
    const terminalSocket = c.connect(terminal.url);
    await Promise.all([opened(screenSocket), opened(terminalSocket)]);
    const upstream = c.gateway.connections.find((connection) => connection.controlId !== undefined)!;
    expect(upstream.controlId).toBe(c.gateway.connections.find((x) => x.controlId === undefined)!.endpoint.id);
    const ended = Promise.all([closed(terminalSocket), closed(screenSocket)]);
    const start = performance.now();
    await c.releaseTakeover(control);
    expect((await ended).map((end) => end.reason)).toEqual(["revoked", "revoked"]);
    expect(performance.now() - start).toBeLessThan(500);
    const closedTerminal = await eventually(() =>
      c.events.find((e) => e.type === "screen.proxy.websocket_closed" && e.policy.mode === "terminal"),
    );
    expect(closedTerminal).toMatchObject({ closer: "revoked", capabilityId: terminal.id });
    await expect(opened(c.connect(terminal.url))).rejects.toMatchObject({ status: 403 });
  } finally {
    await c.stop();
  }
});
