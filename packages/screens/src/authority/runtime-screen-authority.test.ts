import type { DesktopSession, ScreenEndpoint, TerminalEndpoint } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import { LeaseEngine, MemoryStateStore } from "@agent-computer/leases";
import type { ComputerEvent, ComputerRuntime } from "@agent-computer/runtime";
import { describe, expect, it } from "vitest";
import { runtimeScreenAuthority } from "./runtime-screen-authority.js";
import type { ScreenAuthorityChange } from "./screen-authority-change.js";
import type { ScreenRuntime } from "./screen-runtime.js";

// The runtime's parts stand in for a ComputerRuntime: a real lease engine
// on the memory store, desktops that hand out endpoints, and lifecycle events.

function fakeRuntime(options: { terminals?: boolean } = {}) {
  const leases = new LeaseEngine(new MemoryStateStore());
  const listeners = new Set<(event: ComputerEvent) => void>();
  const calls: string[] = [];
  const runtime: ScreenRuntime = {
    leases,
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async desktopFor({ computerId, botId }) {
      calls.push(`desktopFor ${computerId} ${botId}`);
      return {
        botId,
        display: ":100",
        async screenEndpoint(mode, _ctx, opts): Promise<ScreenEndpoint> {
          calls.push(`screenEndpoint ${mode} ${opts?.ttlMs}`);
          return { mode, id: "ep-1", url: "ws://10.0.0.2:6080/screens/ep-1", token: "t", expiresAt: Date.now() + 1000 };
        },
        async revokeEndpoint(id) {
          calls.push(`revokeEndpoint ${id}`);
        },
        ...(options.terminals === false
          ? {}
          : {
              async terminalEndpoint(_ctx: unknown, opts?: unknown): Promise<TerminalEndpoint> {
                calls.push(`terminalEndpoint ${JSON.stringify(opts)}`);
                return {
                  id: "tm-1",
                  url: "ws://10.0.0.2:6080/terminals/tm-1",
                  token: "t",
                  expiresAt: Date.now() + 1000,
                };
              },
            }),
      } as DesktopSession;
    },
  };
  const emit = (event: Omit<ComputerEvent, "at" | "durationMs">) =>
    listeners.forEach((l) => void l({ at: Date.now(), durationMs: 0, ...event }));
  return { runtime, leases, calls, emit, listeners };
}

// A ComputerRuntime is a ScreenRuntime: this stops compiling if core drifts.
export const runtimeIsScreenRuntime = (runtime: ComputerRuntime): ScreenRuntime => runtime;

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => "ok",
    (e) => (AgentComputerError.is(e) ? e.code : String(e)),
  );

describe("runtimeScreenAuthority", () => {
  it("opens a view endpoint on the bot's desktop and revokes it there", async () => {
    const { runtime, calls } = fakeRuntime();
    const authority = runtimeScreenAuthority(runtime);
    const grant = await authority.open({ computerId: "team-1", botId: "bot-1", mode: "view", ttlMs: 30_000 });
    expect(grant.endpoint.id).toBe("ep-1");
    await grant.revoke();
    expect(calls).toEqual(["desktopFor team-1 bot-1", "screenEndpoint view 30000", "revokeEndpoint ep-1"]);
  });

  it("allows view while the computer exists", async () => {
    const { runtime, leases } = fakeRuntime();
    const authority = runtimeScreenAuthority(runtime);
    expect(await codeOf(authority.check({ computerId: "team-1", botId: "b", mode: "view" }))).toBe("NOT_FOUND");
    await leases.createComputer({ computerId: "team-1", providerKind: "fake", homeKey: "team-1", storageId: "team-1" });
    expect(await codeOf(authority.check({ computerId: "team-1", botId: "b", mode: "view" }))).toBe("ok");
  });

  it("allows control only with the current user-control lease of that screen", async () => {
    const { runtime, leases, calls } = fakeRuntime();
    const authority = runtimeScreenAuthority(runtime);
    const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    const request = { computerId: "team-1", botId: "bot-1", mode: "control" as const };
    expect(await codeOf(authority.open({ ...request, ttlMs: 1000 }))).toBe("FENCED_OUT");
    expect(calls).toEqual([]);
    expect(await codeOf(authority.check({ ...request, control }))).toBe("ok");
    expect((await authority.open({ ...request, ttlMs: 1000, control })).endpoint.mode).toBe("control");
    expect(await codeOf(authority.check({ ...request, botId: "bot-2", control }))).toBe("FENCED_OUT");
    const execution = await leases.acquireExecution({
      computerId: "team-1",
      botId: "bot-9",
      holder: "w",
      ttlMs: 60_000,
    });
    expect(await codeOf(authority.check({ ...request, control: execution }))).toBe("FENCED_OUT");
    // A copy of the lease's fields (as sealed in a capability) is not the engine's own lease.
    expect(await codeOf(authority.check({ ...request, control: { ...control } }))).toBe("LEASE_LOST");
    await leases.release(control);
    expect(await codeOf(authority.check({ ...request, control }))).toBe("LEASE_LOST");
    const next = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person-2", ttlMs: 60_000 });
    expect(await codeOf(authority.check({ ...request, control }))).toBe("FENCED_OUT");
    expect(await codeOf(authority.check({ ...request, control: next }))).toBe("ok");
  });

  it("opens a terminal only with the current user-control lease, under controlId when given, and revokes it", async () => {
    const { runtime, leases, calls } = fakeRuntime();
    const authority = runtimeScreenAuthority(runtime);
    const request = { computerId: "team-1", botId: "bot-1", ttlMs: 30_000 };
    const stranger = await leases.takeover({ computerId: "team-1", botId: "bot-2", holder: "p", ttlMs: 60_000 });
    expect(await codeOf(authority.openTerminal!({ ...request, control: stranger }))).toBe("FENCED_OUT");
    expect(calls).toEqual([]);
    const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    const linked = await authority.openTerminal!({ ...request, control, controlId: "ep-1" });
    expect(linked.endpoint.id).toBe("tm-1");
    await authority.openTerminal!({ ...request, control });
    await linked.revoke();
    expect(calls).toEqual([
      "desktopFor team-1 bot-1",
      'terminalEndpoint {"ttlMs":30000,"controlId":"ep-1"}',
      "desktopFor team-1 bot-1",
      'terminalEndpoint {"ttlMs":30000}',
      "revokeEndpoint tm-1",
    ]);
    await leases.release(control);
    expect(await codeOf(authority.openTerminal!({ ...request, control }))).toBe("LEASE_LOST");
  });

  it("is UNSUPPORTED for a desktop without terminals", async () => {
    const { runtime, leases } = fakeRuntime({ terminals: false });
    const control = await leases.takeover({ computerId: "team-1", botId: "bot-1", holder: "person", ttlMs: 60_000 });
    expect(
      await codeOf(
        runtimeScreenAuthority(runtime).openTerminal!({ computerId: "team-1", botId: "bot-1", ttlMs: 1000, control }),
      ),
    ).toBe("UNSUPPORTED");
  });

  it("reports takeover-ended as control-ended, and unsubscribes", () => {
    const { runtime, emit, listeners } = fakeRuntime();
    const changes: ScreenAuthorityChange[] = [];
    const stop = runtimeScreenAuthority(runtime).watch!((change) => changes.push(change));
    emit({ type: "takeover-started", computerId: "team-1", detail: { botId: "bot-1" } });
    emit({ type: "takeover-ended", computerId: "team-1", detail: { botId: "bot-1" } });
    emit({ type: "takeover-ended", computerId: "team-1", detail: {} });
    expect(changes).toEqual([{ computerId: "team-1", botId: "bot-1", kind: "control-ended" }]);
    stop();
    expect(listeners.size).toBe(0);
  });
});
