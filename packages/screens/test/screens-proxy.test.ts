import { AgentComputerError } from "@agent-computer/core";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScreenEvent } from "../src/index.js";
import {
  closed,
  eventually,
  type Harness,
  LeakWatch,
  opened,
  rawUpgrade,
  received,
  rfb,
  startHarness,
} from "./harness.js";

// The proxy between a browser and a (fake) in-computer gateway, over real
// sockets on 127.0.0.1.

const watch = new LeakWatch();
let h: Harness;
const leases = new LeaseEngine(new MemoryStateStore());

beforeAll(async () => {
  h = await startHarness(watch, { controlCheckIntervalMs: 200 });
});
afterAll(async () => {
  await h.stop();
});

const issueView = async (botId = "bot-1") =>
  watch.capability(await h.screens.issueScreenCapability({ computerId: "team-1", botId, mode: "view", ttlMs: 60_000 }));

const issueControl = async (botId: string) => {
  const control = await leases.takeover({ computerId: "team-1", botId, holder: "person-1", ttlMs: 60_000 });
  const capability = watch.capability(
    await h.screens.issueScreenCapability({ computerId: "team-1", botId, mode: "control", ttlMs: 60_000, control }),
  );
  return { control, capability };
};

const eventsOf = <T extends ScreenEvent["type"]>(type: T) =>
  h.events.filter((e): e is Extract<ScreenEvent, { type: T }> => e.type === type);

const closedEventOf = (capabilityId: string) =>
  eventually(() => eventsOf("screen.proxy.websocket_closed").find((e) => e.capabilityId === capabilityId));

describe("issuing", () => {
  it("hands out a relative capability path that names no provider host, token or endpoint", async () => {
    const capability = await issueView();
    expect(capability.url).toMatch(/^\/screens\/c\/[A-Za-z0-9_-]+$/);
    expect(capability.viewerUrl).toBe(`/screens/viewer#c=${capability.url.slice("/screens/c/".length)}&mode=view`);
    const endpoint = h.gateway.endpoint("view"); // same host and port as the one sealed
    const decoded = Buffer.from(capability.url.split("/c/")[1]!, "base64url").toString("latin1");
    for (const leak of [h.gateway.hostPort, "127.0.0.1", "tok-", "ep-", "Bearer", "ws://", endpoint.url])
      expect(decoded).not.toContain(leak);
    expect(eventsOf("screen.capability.issued").at(-1)).toMatchObject({
      capabilityId: capability.id,
      policy: { mode: "view", computerId: "team-1", botId: "bot-1" },
    });
  });

  it("refuses bad input with INVALID_ARGUMENT naming the path", async () => {
    const control = await leases.takeover({ computerId: "team-1", botId: "bot-x", holder: "p", ttlMs: 60_000 });
    const cases: [unknown, RegExp][] = [
      [{ computerId: "", botId: "b", mode: "view", ttlMs: 60_000 }, /"computerId"/],
      [{ computerId: "c", botId: "b", mode: "watch", ttlMs: 60_000 }, /"mode"/],
      [{ computerId: "c", botId: "b", mode: "view", ttlMs: -1 }, /"ttlMs"/],
      [{ computerId: "c", botId: "b", mode: "control", ttlMs: 60_000 }, /"control"/],
      [{ computerId: "team-1", botId: "other", mode: "control", ttlMs: 60_000, control }, /this computer and bot/],
      [{ computerId: "team-1", botId: "bot-x", mode: "view", ttlMs: 60_000, control }, /takes no control lease/],
    ];
    for (const [input, message] of cases) {
      const error = await h.screens.issueScreenCapability(input as never).catch((e) => e);
      expect(AgentComputerError.is(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
      expect(error.message).toMatch(message);
    }
  });
});

describe("bridging", () => {
  it("upgrades, proves the token upstream without sending it, and relays bytes both ways", async () => {
    const capability = await issueView();
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    const fromGateway = received(ws);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    expect(h.gateway.authorizations.at(-1)).toBe("proof");
    expect((await fromGateway.until(12)).toString("latin1")).toBe("RFB 003.008\n");
    ws.send(Buffer.concat([rfb.version, rfb.securityNone]));
    ws.send(Buffer.concat([rfb.clientInit, rfb.setEncodings, rfb.updateRequest]));
    await eventually(() => upstream.bytes.length >= 12 + 1 + 1 + rfb.setEncodings.length + 10);
    expect(upstream.bytes).toEqual(
      Buffer.concat([rfb.version, rfb.securityNone, rfb.clientInit, rfb.setEncodings, rfb.updateRequest]),
    );
    upstream.socket.send(Buffer.from("server-init-and-frames"));
    expect((await fromGateway.until(12 + 22)).subarray(12).toString()).toBe("server-init-and-frames");
    expect(eventsOf("screen.proxy.websocket_upgraded").at(-1)).toMatchObject({ capabilityId: capability.id });
    ws.close(1000);
    const event = await closedEventOf(capability.id);
    expect(event).toMatchObject({ closer: "client", handshakeCompleted: true, code: 1000 });
    expect(await upstream.closed).toBe(1000);
  });

  it("reports the gateway's answers to the challenge (401) and the upgrade (101) as http_upstream_response", async () => {
    const capability = await issueView("bot-answers");
    const ws = h.connect(capability);
    await opened(ws);
    const answers = await eventually(() => {
      const found = eventsOf("screen.proxy.http_upstream_response").filter((e) => e.capabilityId === capability.id);
      return found.length === 2 ? found : undefined;
    });
    expect(answers.map((e) => [e.stage, e.status])).toEqual([
      ["challenge", 401],
      ["upgrade", 101],
    ]);
    expect(answers[0]?.policy).toMatchObject({ mode: "view", botId: "bot-answers" });
    ws.close(1000);
    await closedEventOf(capability.id);
  });

  it("reports an open socket as use of its computer when it opens and when it closes (idle counts from the close)", async () => {
    const capability = await issueView("bot-use");
    const usesOf = () => h.authority.uses.filter((u) => u.botId === "bot-use");
    const ws = h.connect(capability);
    await opened(ws);
    await eventually(() => usesOf().length === 1 || undefined);
    expect(usesOf()).toEqual([{ computerId: "team-1", botId: "bot-use" }]);
    ws.close(1000);
    await closedEventOf(capability.id);
    await eventually(() => usesOf().length === 2 || undefined);
  });

  it("view mode drops a PointerEvent, a KeyEvent and ClientCutText but passes the handshake", async () => {
    const capability = await issueView();
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    // Split and joined oddly: the filter reads messages, not frames.
    const stream = Buffer.concat([
      rfb.version,
      rfb.securityNone,
      rfb.clientInit,
      rfb.setEncodings,
      rfb.pointer,
      rfb.updateRequest,
      rfb.key,
      rfb.cutText("paste me"),
      rfb.updateRequest,
    ]);
    for (const piece of [stream.subarray(0, 5), stream.subarray(5, 20), stream.subarray(20, 31), stream.subarray(31)])
      ws.send(piece);
    const expected = Buffer.concat([
      rfb.version,
      rfb.securityNone,
      rfb.clientInit,
      rfb.setEncodings,
      rfb.updateRequest,
      rfb.updateRequest,
    ]);
    await eventually(() => upstream.bytes.length >= expected.length);
    await new Promise((r) => setTimeout(r, 100));
    expect(upstream.bytes).toEqual(expected);
    ws.close();
    const event = await closedEventOf(capability.id);
    expect(event.droppedClientBytes).toBe(rfb.pointer.length + rfb.key.length + rfb.cutText("paste me").length);
  });

  it("view mode closes a socket that sends a message it cannot size", async () => {
    const capability = await issueView();
    const ws = h.connect(capability);
    await opened(ws);
    ws.send(Buffer.concat([rfb.version, rfb.securityNone, rfb.clientInit, Buffer.of(99, 1, 2, 3)]));
    expect((await closed(ws)).code).toBe(1008);
    expect(await closedEventOf(capability.id)).toMatchObject({ closer: "proxy" });
  });

  it("control mode passes input through", async () => {
    const { capability } = await issueControl("bot-input");
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    const stream = Buffer.concat([rfb.version, rfb.securityNone, rfb.clientInit, rfb.pointer, rfb.key]);
    ws.send(stream);
    await eventually(() => upstream.bytes.length >= stream.length);
    expect(upstream.bytes).toEqual(stream);
    ws.close();
    await closedEventOf(capability.id);
  });

  it("answers the upgrade with Cache-Control: no-transform", async () => {
    const capability = await issueView();
    const ws = h.connect(capability);
    const headers = await new Promise<Record<string, string | string[] | undefined>>((resolve) =>
      ws.once("upgrade", (res) => resolve(res.headers)),
    );
    expect(headers["cache-control"]).toContain("no-transform");
    ws.close();
    await closedEventOf(capability.id);
  });
});

describe("revocation", () => {
  it("closes both sockets within a second with closer revoked, refuses a replay and revokes the endpoint", async () => {
    const capability = await issueView();
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    const start = performance.now();
    const clientClosed = closed(ws);
    const result = await h.screens.revoke(capability.url);
    expect(result).toEqual({ id: capability.id, closedConnections: 1, endpointRevoked: true });
    const { code, reason } = await clientClosed;
    await upstream.closed;
    expect(performance.now() - start).toBeLessThan(1000);
    expect(upstream.closedAt! - start).toBeLessThan(1000);
    expect([code, reason]).toEqual([1008, "revoked"]);
    expect(await closedEventOf(capability.id)).toMatchObject({ closer: "revoked" });
    expect(h.authority.revokedEndpoints).toContain(upstream.endpoint.id);
    expect(eventsOf("screen.capability.revoked").at(-1)).toMatchObject({
      capabilityId: capability.id,
      closedConnections: 1,
    });

    const replay = h.connect(capability);
    await expect(opened(replay)).rejects.toMatchObject({ status: 410 });
    expect(eventsOf("screen.proxy.target_rejected").at(-1)).toMatchObject({
      capabilityId: capability.id,
      reason: "capability_revoked",
    });
  });

  it("takes the id or the viewer URL too, and is idempotent", async () => {
    const a = await issueView();
    expect((await h.screens.revoke(a.id)).id).toBe(a.id);
    expect(await h.screens.revoke(a.id)).toMatchObject({ id: a.id, closedConnections: 0, endpointRevoked: false });
    const b = await issueView();
    expect((await h.screens.revoke(b.viewerUrl)).id).toBe(b.id);
    await expect(opened(h.connect(b))).rejects.toMatchObject({ status: 410 });
    await expect(
      h.screens.revoke("/screens/c/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("a slow client is cut within a second of a revoke", async () => {
    const capability = await issueView();
    const before = h.gateway.connections.length;
    const ws = h.connect(capability);
    await opened(ws);
    const upstream = await h.gateway.nextConnection(before);
    ws.pause(); // reads nothing, not even the closing frame
    void upstream.stream(32 * 1024 * 1024);
    await new Promise((r) => setTimeout(r, 300));
    const start = performance.now();
    await h.screens.revoke(capability.id);
    await upstream.closed;
    expect(upstream.closedAt! - start).toBeLessThan(1000);
    expect(await closedEventOf(capability.id)).toMatchObject({ closer: "revoked" });
    ws.terminate();
  });
});

describe("control", () => {
  it("closes with closer revoked once the authority starts refusing", async () => {
    const { capability } = await issueControl("bot-refuse");
    const ws = h.connect(capability);
    await opened(ws);
    expect(h.authority.checks.at(-1)).toMatchObject({ mode: "control", botId: "bot-refuse" });
    expect(h.authority.checks.at(-1)?.control?.kind).toBe("user-control");
    const start = performance.now();
    h.authority.answer = async () => {
      throw new AgentComputerError("LEASE_LOST", "released");
    };
    try {
      const { code } = await closed(ws);
      expect(code).toBe(1008);
      expect(performance.now() - start).toBeLessThan(1500);
      expect(await closedEventOf(capability.id)).toMatchObject({ closer: "revoked" });
    } finally {
      h.authority.answer = async () => undefined;
    }
  });

  it("closes at once on a watch event when control ended", async () => {
    const slow = await startHarness(watch, { controlCheckIntervalMs: 60_000 });
    try {
      const control = await leases.takeover({ computerId: "team-1", botId: "bot-watch", holder: "p", ttlMs: 60_000 });
      const capability = watch.capability(
        await slow.screens.issueScreenCapability({
          computerId: "team-1",
          botId: "bot-watch",
          mode: "control",
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
      slow.authority.change({ computerId: "team-1", botId: "bot-other", kind: "control-ended" });
      slow.authority.change({ computerId: "team-1", botId: "bot-watch", kind: "control-ended" });
      await closed(ws);
      expect(performance.now() - start).toBeLessThan(500);
      expect(await eventually(() => slow.events.find((e) => e.type === "screen.proxy.websocket_closed"))).toMatchObject(
        { closer: "revoked" },
      );
    } finally {
      await slow.stop();
    }
  });

  it("hands the renewed lease to later checks after updateControl", async () => {
    const { control, capability } = await issueControl("bot-renew");
    const renewed = await leases.renew(control);
    expect(h.screens.updateControl(renewed)).toBe(1);
    const ws = h.connect(capability);
    await opened(ws);
    expect(h.authority.checks.at(-1)?.control).toBe(renewed);
    ws.close();
    await closedEventOf(capability.id);
  });
});

describe("refusals", () => {
  it("refuses hostile and wrong paths before the upgrade with invalid_path", async () => {
    const capability = await issueView();
    const sealed = capability.url.split("/c/")[1]!;
    const paths = [
      `/screens/c/${sealed}/..`,
      `/screens/c/../c/${sealed}`,
      `/screens/c/%2e%2e/${sealed}`,
      `/screens//c/${sealed}`,
      `/screens/x/${sealed}`,
      `/screens/c/${sealed}!`,
      "/screens/viewer",
      `/screens/c/${"A".repeat(5000)}`,
    ];
    for (const path of paths) {
      const count = eventsOf("screen.proxy.target_rejected").length;
      expect(await rawUpgrade(h.port, path), path).toBe(400);
      expect(eventsOf("screen.proxy.target_rejected")[count]).toMatchObject({ reason: "invalid_path", policy: null });
    }
    expect(await rawUpgrade(h.port, capability.url)).toBe(101);
    // Outside publicPath the app's own handler decides (here: destroy).
    for (const path of [`/other/c/${sealed}`, `/screensx/c/${sealed}`, `/../screens/c/${sealed}`])
      expect(await rawUpgrade(h.port, path), path).toBe("destroyed");
  });

  it("refuses tampered, truncated, forged and expired capabilities", async () => {
    const capability = await issueView();
    const sealed = capability.url.split("/c/")[1]!;
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    const forged = Buffer.concat([Buffer.of(1), Buffer.alloc(12), Buffer.from('{"id":"x"}'), Buffer.alloc(16)]);
    for (const bad of [
      flip(sealed, 20),
      flip(sealed, sealed.length - 3),
      sealed.slice(0, -4),
      forged.toString("base64url"),
    ]) {
      await expect(opened(h.connect(`/screens/c/${bad}`))).rejects.toMatchObject({ status: 401 });
      expect(eventsOf("screen.proxy.target_rejected").at(-1)).toMatchObject({ reason: "invalid_capability" });
    }
    let now = Date.now();
    const timed = await startHarness(watch, { clock: () => now });
    try {
      const short = watch.capability(
        await timed.screens.issueScreenCapability({ computerId: "team-1", botId: "b", mode: "view", ttlMs: 5000 }),
      );
      now += 5001;
      await expect(opened(timed.connect(short))).rejects.toMatchObject({ status: 410 });
      expect(timed.events.at(-1)).toMatchObject({ reason: "capability_expired", capabilityId: short.id });
      // A capability sealed by another Screens (another secret) does not open here.
      await expect(opened(h.connect(short))).rejects.toMatchObject({ status: 401 });
    } finally {
      await timed.stop();
    }
  });

  it("maps the authority's answers: rejected 403, unavailable 503, malformed 502", async () => {
    const capability = await issueView();
    const cases: [() => unknown, string, number][] = [
      [() => Promise.reject(new AgentComputerError("FENCED_OUT", "x")), "authority_rejected", 403],
      [() => Promise.reject(new AgentComputerError("NOT_FOUND", "x")), "authority_rejected", 403],
      [() => Promise.reject(new AgentComputerError("UNAVAILABLE", "x")), "authority_unavailable", 503],
      [() => Promise.reject(new Error("plain")), "invalid_authority_response", 502],
      [() => Promise.reject(new AgentComputerError("BOT_BUSY", "x")), "invalid_authority_response", 502],
      [() => Promise.resolve(true), "invalid_authority_response", 502],
      [() => "not a promise", "invalid_authority_response", 502],
      [
        () => {
          throw new Error("sync");
        },
        "invalid_authority_response",
        502,
      ],
    ];
    try {
      for (const [answer, reason, status] of cases) {
        h.authority.answer = answer;
        await expect(opened(h.connect(capability)), reason).rejects.toMatchObject({ status });
        expect(eventsOf("screen.proxy.target_rejected").at(-1)).toMatchObject({ reason, capabilityId: capability.id });
      }
    } finally {
      h.authority.answer = async () => undefined;
    }
  });

  it("reports a gateway that refuses the handshake and answers 502", async () => {
    const capability = await issueView();
    // Revoke the endpoint behind this capability at the gateway only.
    const endpointId = h.authority.endpoints.at(-1)!.id;
    h.gateway.revoke(endpointId);
    await expect(opened(h.connect(capability))).rejects.toMatchObject({ status: 502 });
    expect(eventsOf("screen.proxy.websocket_handshake_failed").at(-1)).toMatchObject({
      capabilityId: capability.id,
      reason: "upstream_refused",
      upstreamStatus: 410,
    });
  });

  it("sends nothing to a gateway that cannot prove the capability (a process that took its port)", async () => {
    const capability = await issueView();
    const token = h.authority.endpoints.at(-1)!.token;
    h.gateway.impostor = true;
    try {
      await expect(opened(h.connect(capability))).rejects.toMatchObject({ status: 502 });
      expect(eventsOf("screen.proxy.websocket_handshake_failed").at(-1)).toMatchObject({
        capabilityId: capability.id,
        reason: "upstream_unproven",
      });
      expect(h.gateway.impostorHeard.length).toBeGreaterThan(0);
      expect(h.gateway.impostorHeard.join("\n")).not.toContain(token);
      // Only the upgrade's proof, never a frame of the person's.
      expect(h.gateway.impostorHeard.every((heard) => heard.startsWith("AgentComputer nonce="))).toBe(true);
    } finally {
      h.gateway.impostor = false;
    }
  });

  it("refuses a plain HTTP request to a capability with 426", async () => {
    const capability = await issueView();
    const res = await fetch(h.url(capability.url));
    expect(res.status).toBe(426);
    expect(res.headers.get("cache-control")).toContain("no-transform");
    expect(eventsOf("screen.proxy.http_failed").at(-1)).toMatchObject({ reason: "upgrade_required", status: 426 });
  });
});

describe("limits", () => {
  it("closes only the connection that sends an oversized frame", async () => {
    const small = await startHarness(watch, { maxClientFrameBytes: 4096 });
    try {
      const capability = watch.capability(
        await small.screens.issueScreenCapability({ computerId: "team-1", botId: "b", mode: "view", ttlMs: 60_000 }),
      );
      const good = small.connect(capability);
      const goodBytes = received(good);
      const bad = small.connect(capability);
      await Promise.all([opened(good), opened(bad)]);
      bad.send(Buffer.alloc(8192));
      expect((await closed(bad)).code).toBe(1009);
      const event = await eventually(() =>
        small.events.find((e) => e.type === "screen.proxy.websocket_closed" && e.closer === "proxy"),
      );
      expect(event).toMatchObject({ code: 1009 });
      // The error itself is an event of its own, before the close, with its code and no message.
      const closedId = event.type === "screen.proxy.websocket_closed" ? event.connectionId : "";
      const error = small.events.find((e) => e.type === "screen.proxy.websocket_error" && e.connectionId === closedId);
      expect(error).toMatchObject({ side: "client", code: "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" });
      expect(small.events.indexOf(error as ScreenEvent)).toBeLessThan(small.events.indexOf(event));
      expect(good.readyState).toBe(good.OPEN);
      good.send(rfb.version);
      await eventually(() => small.gateway.connections.some((c) => c.bytes.equals(rfb.version)));
      expect((await goodBytes.until(12)).subarray(0, 12).toString("latin1")).toBe("RFB 003.008\n");
      good.close();
    } finally {
      await small.stop();
    }
  });

  it("a slow client does not stall another viewer", async () => {
    const capability = await issueView("bot-stream");
    const before = h.gateway.connections.length;
    const slow = h.connect(capability);
    await opened(slow);
    const slowUpstream = await h.gateway.nextConnection(before);
    const fast = h.connect(capability);
    const fastBytes = received(fast);
    await opened(fast);
    const fastUpstream = await h.gateway.nextConnection(before + 1);
    slow.pause();
    const total = 48 * 1024 * 1024;
    let slowDone = false;
    void slowUpstream.stream(total).then(() => {
      slowDone = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    const start = performance.now();
    await fastUpstream.stream(total);
    await fastBytes.until(12 + total);
    const elapsed = performance.now() - start;
    expect(elapsed).toBeLessThan(15_000);
    // The proxy stopped reading the slow viewer's stream instead of queueing it.
    expect(slowDone).toBe(false);
    expect(slowUpstream.socket.bufferedAmount).toBeGreaterThan(0);
    slow.terminate();
    fast.close();
    await closedEventOf(capability.id);
  });
});

describe("events and logs", () => {
  it("never carry a capability URL, sealed blob, token, provider host or header", () => {
    watch.endpointsOf(h.authority);
    expect(watch.lines.length).toBeGreaterThan(20);
    expect(watch.secrets.size).toBeGreaterThan(10);
    const all = watch.lines.join("\n");
    for (const secret of watch.secrets) expect(all.toLowerCase()).not.toContain(secret.toLowerCase());
    for (const line of watch.lines) expect(line).not.toMatch(/ws:\/\/|wss:\/\/|cookie|bearer|tok-/i);
    // Every proxy event names its connection.
    for (const event of h.events)
      if (event.type.startsWith("screen.proxy."))
        expect((event as { connectionId: string }).connectionId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
