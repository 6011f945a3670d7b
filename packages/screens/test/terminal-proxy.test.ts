import { randomBytes } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { createScreens, type ScreenEvent } from "../src/index.js";
import { closed, eventually, type Harness, LeakWatch, opened, rawUpgrade, startHarness } from "./harness.js";

// Terminals through the proxy to the (fake) gateway's echoing shell, over
// real sockets on 127.0.0.1.

const watch = new LeakWatch();
let h: Harness;
const leases = new LeaseEngine(new MemoryStateStore());

beforeAll(async () => {
  h = await startHarness(watch, { controlCheckIntervalMs: 200 });
});
afterAll(async () => {
  await h.stop();
});

const takeover = (botId: string) => leases.takeover({ computerId: "team-1", botId, holder: "person-1", ttlMs: 60_000 });

const issueTerminal = async (botId: string, control?: Awaited<ReturnType<typeof takeover>>) => {
  const lease = control ?? (await takeover(botId));
  const capability = watch.terminal(
    await h.screens.issueTerminalCapability({ computerId: "team-1", botId, ttlMs: 60_000, control: lease }),
  );
  return { control: lease, capability };
};

const eventsOf = <T extends ScreenEvent["type"]>(type: T) =>
  h.events.filter((e): e is Extract<ScreenEvent, { type: T }> => e.type === type);

const closedEventOf = (capabilityId: string) =>
  eventually(() => eventsOf("screen.proxy.websocket_closed").find((e) => e.capabilityId === capabilityId));

/** Every frame a socket receives, with its type. */
function frames(ws: WebSocket) {
  const all: { data: Buffer; binary: boolean }[] = [];
  ws.on("message", (data, binary) => all.push({ data: data as Buffer, binary }));
  return {
    all,
    until: (text: string) =>
      eventually(() => all.find((f) => f.data.toString("utf8").includes(text)), 5000) as Promise<{
        data: Buffer;
        binary: boolean;
      }>,
  };
}

describe("issuing a terminal", () => {
  it("hands out /t/ and the terminal page with the capability in the fragment, and needs no control screen", async () => {
    const { capability } = await issueTerminal("bot-alone");
    expect(capability.url).toMatch(/^\/screens\/t\/[A-Za-z0-9_-]+$/);
    expect(capability.terminalUrl).toBe(`/screens/terminal#c=${capability.url.slice("/screens/t/".length)}`);
    expect(capability.screenCapabilityId).toBeNull();
    expect(h.screens.terminalPath).toBe("/screens/terminal");
    expect(h.authority.openedTerminals.at(-1)).toMatchObject({ computerId: "team-1", botId: "bot-alone" });
    expect(h.authority.openedTerminals.at(-1)?.controlId).toBeUndefined();
    expect(eventsOf("screen.capability.issued").at(-1)).toMatchObject({
      capabilityId: capability.id,
      policy: { mode: "terminal", computerId: "team-1", botId: "bot-alone" },
    });
    const decoded = Buffer.from(capability.url.split("/t/")[1]!, "base64url").toString("latin1");
    for (const leak of [h.gateway.hostPort, "tok-", "tm-", "Bearer", "ws://"]) expect(decoded).not.toContain(leak);
  });

  it("lives under the live control screen issued for the same bot and lease", async () => {
    const control = await takeover("bot-linked");
    const screen = watch.capability(
      await h.screens.issueScreenCapability({
        computerId: "team-1",
        botId: "bot-linked",
        mode: "control",
        ttlMs: 60_000,
        control,
      }),
    );
    const screenEndpoint = h.authority.endpoints.at(-1)!;
    const { capability } = await issueTerminal("bot-linked", control);
    expect(capability.screenCapabilityId).toBe(screen.id);
    expect(h.authority.openedTerminals.at(-1)?.controlId).toBe(screenEndpoint.id);
    // Another lease of the same bot (a later takeover) does not reuse it.
    await leases.release(control);
    const { capability: other } = await issueTerminal("bot-linked");
    expect(other.screenCapabilityId).toBeNull();
    expect(h.authority.openedTerminals.at(-1)?.controlId).toBeUndefined();
  });

  it("gets a control endpoint of its own when the gateway no longer has the control screen's", async () => {
    const control = await takeover("bot-gone");
    await h.screens
      .issueScreenCapability({ computerId: "team-1", botId: "bot-gone", mode: "control", ttlMs: 60_000, control })
      .then((c) => watch.capability(c));
    h.gateway.revoke(h.authority.endpoints.at(-1)!.id); // at the gateway only: a replaced computer
    const { capability } = await issueTerminal("bot-gone", control);
    expect(capability.screenCapabilityId).toBeNull();
    expect(h.authority.openedTerminals.at(-1)?.controlId).toBeUndefined();
  });

  it("needs the user-control lease of this computer and bot: there is no view terminal", async () => {
    const control = await takeover("bot-args");
    const cases: [unknown, RegExp][] = [
      [{ computerId: "team-1", botId: "bot-args", ttlMs: 60_000 }, /"control".*user-control lease/],
      [{ computerId: "team-1", botId: "other", ttlMs: 60_000, control }, /this computer and bot/],
      [{ computerId: "team-1", botId: "bot-args", ttlMs: 60_000, control, mode: "view" }, /mode/],
      [{ computerId: "team-1", botId: "bot-args", ttlMs: 10, control }, /"ttlMs"/],
    ];
    for (const [input, message] of cases) {
      const error = await h.screens.issueTerminalCapability(input as never).catch((e) => e);
      expect(AgentComputerError.is(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
      expect(error.message).toMatch(message);
    }
  });

  it("is UNSUPPORTED with an authority that has no openTerminal, and refuses a screen endpoint as a terminal", async () => {
    const bare = createScreens({
      authority: { open: h.authority.open.bind(h.authority), check: async () => undefined },
      secret: randomBytes(32),
    });
    const control = await takeover("bot-bare");
    await expect(
      bare.issueTerminalCapability({ computerId: "team-1", botId: "bot-bare", ttlMs: 60_000, control }),
    ).rejects.toMatchObject({ code: "UNSUPPORTED" });
    let revoked = false;
    const confused = createScreens({
      authority: {
        open: h.authority.open.bind(h.authority),
        check: async () => undefined,
        openTerminal: async () => ({
          endpoint: h.gateway.endpoint("control"),
          revoke: async () => {
            revoked = true;
          },
        }),
      },
      secret: randomBytes(32),
    });
    await expect(
      confused.issueTerminalCapability({ computerId: "team-1", botId: "bot-bare", ttlMs: 60_000, control }),
    ).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringMatching(/control endpoint for a terminal/) });
    expect(revoked).toBe(true);
    await Promise.all([bare.close(), confused.close()]);
  });
});

describe("bridging a terminal", () => {
  it("relays binary frames as binary and text frames as text, both ways, through the gateway's bearer check", async () => {
    const { capability } = await issueTerminal("bot-echo");
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    const got = frames(ws);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    expect(upstream.controlId).toBeDefined();
    expect(await got.until("fake-shell$ ")).toMatchObject({ binary: true });

    const keys = Buffer.from("ls -l ünïcode\r", "utf8");
    ws.send(keys, { binary: true });
    const echoed = await got.until("ls -l");
    expect(echoed.binary).toBe(true);
    expect(echoed.data).toEqual(keys);

    const resize = JSON.stringify({ type: "resize", cols: 132, rows: 43 });
    ws.send(resize);
    expect(await got.until("resized 132x43")).toMatchObject({ binary: true });
    await eventually(() => upstream.frames.length >= 2);
    expect(upstream.frames).toEqual([
      { data: keys, binary: true },
      { data: Buffer.from(resize), binary: false },
    ]);

    // Bytes that are not UTF-8 pass untouched in a binary frame.
    const raw = Buffer.of(0x1b, 0x5b, 0x4d, 0xff, 0x00, 0x80);
    ws.send(raw);
    await eventually(() => got.all.some((f) => f.data.equals(raw)));

    expect(eventsOf("screen.proxy.websocket_upgraded").at(-1)).toMatchObject({
      capabilityId: capability.id,
      policy: { mode: "terminal", computerId: "team-1", botId: "bot-echo" },
    });
    ws.close(1000);
    expect(await closedEventOf(capability.id)).toMatchObject({
      closer: "client",
      code: 1000,
      handshakeCompleted: true,
      droppedClientBytes: 0,
      policy: { mode: "terminal" },
    });
    expect(await upstream.closed).toBe(1000);
  });

  it("gives each socket its own shell under one capability", async () => {
    const { capability } = await issueTerminal("bot-tabs");
    const before = h.gateway.connections.length;
    const a = h.connect(capability);
    const b = h.connect(capability);
    const [fa, fb] = [frames(a), frames(b)];
    await Promise.all([opened(a), opened(b)]);
    await eventually(() => h.gateway.connections.length >= before + 2);
    a.send(Buffer.from("only-a"));
    b.send(Buffer.from("only-b"));
    await fa.until("only-a");
    await fb.until("only-b");
    expect(fa.all.some((f) => f.data.toString().includes("only-b"))).toBe(false);
    a.close();
    b.close();
    await closedEventOf(capability.id);
  });

  it("checks the authority as control, with kind terminal", async () => {
    const { control, capability } = await issueTerminal("bot-check");
    const ws = h.connect(capability);
    await opened(ws);
    expect(h.authority.checks.at(-1)).toMatchObject({ mode: "control", kind: "terminal", botId: "bot-check" });
    expect(h.authority.checks.at(-1)?.control).toBe(control);
    ws.close();
    await closedEventOf(capability.id);
  });

  it("closes only the socket that sends an oversized frame", async () => {
    const small = await startHarness(watch, { maxClientFrameBytes: 4096 });
    try {
      const control = await takeover("bot-big");
      const capability = watch.terminal(
        await small.screens.issueTerminalCapability({ computerId: "team-1", botId: "bot-big", ttlMs: 60_000, control }),
      );
      const good = small.connect(capability);
      const bad = small.connect(capability);
      const goodFrames = frames(good);
      await Promise.all([opened(good), opened(bad)]);
      bad.send("x".repeat(8192));
      expect((await closed(bad)).code).toBe(1009);
      good.send(Buffer.from("still-here"));
      await goodFrames.until("still-here");
      good.close();
    } finally {
      await small.stop();
    }
  });
});

describe("routes", () => {
  it("refuses a screen capability at /t/ and a terminal capability at /c/ (wrong_route, 403)", async () => {
    const view = watch.capability(
      await h.screens.issueScreenCapability({ computerId: "team-1", botId: "bot-r", mode: "view", ttlMs: 60_000 }),
    );
    const control = await takeover("bot-r");
    const screen = watch.capability(
      await h.screens.issueScreenCapability({
        computerId: "team-1",
        botId: "bot-r",
        mode: "control",
        ttlMs: 60_000,
        control,
      }),
    );
    const { capability: terminal } = await issueTerminal("bot-r", control);
    const before = h.gateway.connections.length;
    const cases: [string, string][] = [
      [view.url.replace("/c/", "/t/"), view.id],
      [screen.url.replace("/c/", "/t/"), screen.id],
      [terminal.url.replace("/t/", "/c/"), terminal.id],
    ];
    for (const [path, capabilityId] of cases) {
      await expect(opened(h.connect(path)), path.slice(0, 12)).rejects.toMatchObject({ status: 403 });
      expect(eventsOf("screen.proxy.target_rejected").at(-1)).toMatchObject({ reason: "wrong_route", capabilityId });
    }
    expect(h.gateway.connections.length).toBe(before); // refused before the gateway was asked
    expect(await rawUpgrade(h.port, `${terminal.url}/..`)).toBe(400);
    expect(await rawUpgrade(h.port, "/screens/t/")).toBe(400);
    const plain = await fetch(h.url(terminal.url));
    expect(plain.status).toBe(426);
  });
});

describe("ending a terminal", () => {
  it("revoke closes both sides within a second with closer revoked, refuses a replay and revokes the endpoint", async () => {
    const { capability } = await issueTerminal("bot-revoke");
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    const start = performance.now();
    const clientClosed = closed(ws);
    expect(await h.screens.revoke(capability.terminalUrl)).toEqual({
      id: capability.id,
      closedConnections: 1,
      endpointRevoked: true,
    });
    expect(await clientClosed).toEqual({ code: 1008, reason: "revoked" });
    await upstream.closed;
    expect(performance.now() - start).toBeLessThan(1000);
    expect(await closedEventOf(capability.id)).toMatchObject({ closer: "revoked" });
    expect(h.authority.revokedEndpoints).toContain(upstream.endpoint.id);
    await expect(opened(h.connect(capability))).rejects.toMatchObject({ status: 410 });
    expect(eventsOf("screen.proxy.target_rejected").at(-1)).toMatchObject({ reason: "capability_revoked" });
  });

  it("revoking the control screen ends the terminals under it (closer revoked) and refuses them after", async () => {
    const control = await takeover("bot-cascade");
    const screen = watch.capability(
      await h.screens.issueScreenCapability({
        computerId: "team-1",
        botId: "bot-cascade",
        mode: "control",
        ttlMs: 60_000,
        control,
      }),
    );
    const { capability: terminal } = await issueTerminal("bot-cascade", control);
    const screenSocket = h.connect(screen);
    const terminalSocket = h.connect(terminal);
    await Promise.all([opened(screenSocket), opened(terminalSocket)]);
    const start = performance.now();
    const result = await h.screens.revoke(screen.id);
    expect(result).toMatchObject({ closedConnections: 2, endpointRevoked: true });
    expect((await closed(terminalSocket)).reason).toBe("revoked");
    expect(performance.now() - start).toBeLessThan(1000);
    expect(await closedEventOf(terminal.id)).toMatchObject({ closer: "revoked" });
    await expect(opened(h.connect(terminal))).rejects.toMatchObject({ status: 410 });
  });

  it("closes with closer revoked once the authority stops allowing control", async () => {
    const { capability } = await issueTerminal("bot-release");
    const ws = h.connect(capability);
    await opened(ws);
    const start = performance.now();
    h.authority.answer = async () => {
      throw new AgentComputerError("LEASE_LOST", "released");
    };
    try {
      expect((await closed(ws)).code).toBe(1008);
      expect(performance.now() - start).toBeLessThan(1500);
      expect(await closedEventOf(capability.id)).toMatchObject({ closer: "revoked" });
    } finally {
      h.authority.answer = async () => undefined;
    }
  });

  it("closes at once on a watch event when control ended", async () => {
    const slow = await startHarness(watch, { controlCheckIntervalMs: 60_000 });
    try {
      const control = await takeover("bot-watch");
      const capability = watch.terminal(
        await slow.screens.issueTerminalCapability({
          computerId: "team-1",
          botId: "bot-watch",
          ttlMs: 60_000,
          control,
        }),
      );
      const ws = slow.connect(capability);
      await opened(ws);
      slow.authority.answer = async () => {
        throw new AgentComputerError("FENCED_OUT", "released");
      };
      const start = performance.now();
      slow.authority.change({ computerId: "team-1", botId: "bot-watch", kind: "control-ended" });
      expect((await closed(ws)).reason).toBe("revoked");
      expect(performance.now() - start).toBeLessThan(500);
    } finally {
      await slow.stop();
    }
  });
});

describe("events and logs", () => {
  it("never carry a capability URL, sealed blob, token, provider host or header", () => {
    watch.endpointsOf(h.authority);
    expect(watch.lines.length).toBeGreaterThan(20);
    const all = watch.lines.join("\n").toLowerCase();
    for (const secret of watch.secrets) expect(all).not.toContain(secret.toLowerCase());
    for (const line of watch.lines) expect(line).not.toMatch(/ws:\/\/|wss:\/\/|cookie|bearer|tok-|fake-shell/i);
  });
});
