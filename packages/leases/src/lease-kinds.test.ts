import { AgentComputerError } from "@agent-computer/core";
import { manualEngine } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";
import type { Reservation } from "./reservation.js";

async function errorOf(promise: Promise<unknown>): Promise<AgentComputerError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (error instanceof AgentComputerError) return error;
    throw error;
  }
}

const TTL = 1000;

describe("execution leases", () => {
  it("let different bots run concurrently and keep one driver per bot", async () => {
    const { engine } = manualEngine();
    const a = await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    const b = await engine.acquireExecution({ computerId: "c", botId: "b", holder: "w2", ttlMs: TTL });
    expect([a.kind, a.botId, b.botId]).toEqual(["execution", "a", "b"]);
    expect(
      (await errorOf(engine.acquireExecution({ computerId: "c", botId: "a", holder: "w3", ttlMs: TTL })))?.code,
    ).toBe("LEASE_HELD");
  });

  it("do not collide with an app lease whose key looks like a derived one", async () => {
    const { engine } = manualEngine();
    const exec = await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    const custom = await engine.acquire({ key: exec.key, holder: "other", ttlMs: TTL });
    expect(custom.token).toBe(1);
  });

  it("keep ids with separators apart", async () => {
    const { engine } = manualEngine();
    await engine.acquireExecution({ computerId: "a/b", botId: "c", holder: "w1", ttlMs: TTL });
    await engine.acquireExecution({ computerId: "a", botId: "b/c", holder: "w2", ttlMs: TTL });
  });
});

describe("takeover (user-control lease)", () => {
  it("is refused with BOT_BUSY while the bot holds a live execution lease", async () => {
    const { engine } = manualEngine();
    await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    const error = await errorOf(engine.takeover({ computerId: "c", botId: "a", holder: "person", ttlMs: TTL }));
    expect(error?.code).toBe("BOT_BUSY");
    expect(error?.message).toContain("Stop the bot first");
  });

  it("is refused with BOT_BUSY when the caller says the run is active, even without a lease", async () => {
    const { engine } = manualEngine();
    const error = await errorOf(
      engine.takeover({ computerId: "c", botId: "a", holder: "p", ttlMs: TTL, run: "active" }),
    );
    expect(error?.code).toBe("BOT_BUSY");
  });

  it("is accepted while the run is waiting_takeover, and then fences the bot's desktop", async () => {
    const { engine } = manualEngine();
    const exec = await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    const control = await engine.takeover({
      computerId: "c",
      botId: "a",
      holder: "person",
      ttlMs: TTL,
      run: "waiting_takeover",
    });
    expect(control.kind).toBe("user-control");
    await engine.assertCurrent(exec, { desktop: "b" }); // another bot's screen is not controlled
    const error = await errorOf(engine.assertCurrent(exec));
    expect(error?.code).toBe("FENCED_OUT");
    expect(error?.message).toContain("person controls");
    await engine.release(control);
    await engine.assertCurrent(exec);
  });

  it("is accepted once the bot's lease is released, and refuses a second person", async () => {
    const { engine } = manualEngine();
    const exec = await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    await engine.release(exec);
    await engine.takeover({ computerId: "c", botId: "a", holder: "p1", ttlMs: TTL, run: "idle" });
    expect((await errorOf(engine.takeover({ computerId: "c", botId: "a", holder: "p2", ttlMs: TTL })))?.code).toBe(
      "LEASE_HELD",
    );
  });
});

describe("checkpoint lease", () => {
  it("is per computer", async () => {
    const { engine } = manualEngine();
    await engine.acquireCheckpoint({ computerId: "c1", holder: "a", ttlMs: TTL });
    await engine.acquireCheckpoint({ computerId: "c2", holder: "b", ttlMs: TTL });
    expect((await errorOf(engine.acquireCheckpoint({ computerId: "c1", holder: "b", ttlMs: TTL })))?.code).toBe(
      "LEASE_HELD",
    );
  });
});

describe("reservations", () => {
  it("exclude new execution leases, takeovers and other reservations, but not leases granted before", async () => {
    const { engine } = manualEngine();
    const before = await engine.acquireExecution({ computerId: "c", botId: "a", holder: "w1", ttlMs: TTL });
    const reservation = await engine.reserve({ computerId: "c", holder: "updater", purpose: "update" });
    expect(reservation).toMatchObject({ kind: "reservation", computerId: "c", purpose: "update" });
    for (const attempt of [
      engine.acquireExecution({ computerId: "c", botId: "b", holder: "w2", ttlMs: TTL }),
      engine.takeover({ computerId: "c", botId: "b", holder: "p", ttlMs: TTL }),
      engine.reserve({ computerId: "c", holder: "stopper", purpose: "stop" }),
    ]) {
      expect((await errorOf(attempt))?.code).toBe("LEASE_HELD");
    }
    await engine.renew(before);
    await engine.acquireExecution({ computerId: "other", botId: "b", holder: "w2", ttlMs: TTL });
    await engine.release(reservation);
    await engine.acquireExecution({ computerId: "c", botId: "b", holder: "w2", ttlMs: TTL });
  });

  it("turn interrupted after ten minutes without a heartbeat and stay reserved until releaseInterrupted", async () => {
    const { engine, advance } = manualEngine();
    let reservation: Reservation = await engine.reserve({ computerId: "c", holder: "updater", purpose: "recovery" });
    advance(9 * 60_000);
    reservation = await engine.renew(reservation); // the heartbeat
    advance(9 * 60_000);
    expect((await engine.getReservation("c"))?.status).toBe("running");
    expect((await errorOf(engine.releaseInterrupted({ id: reservation.id, workersStopped: true })))?.code).toBe(
      "LEASE_HELD",
    );
    advance(60_000);
    expect(await engine.getReservation("c")).toMatchObject({ id: reservation.id, status: "interrupted" });
    // A stale heartbeat alone frees nothing, hours later too.
    advance(5 * 60 * 60_000);
    const blocked = await errorOf(engine.acquireExecution({ computerId: "c", botId: "a", holder: "w", ttlMs: TTL }));
    expect(blocked?.code).toBe("LEASE_HELD");
    const again = await errorOf(engine.reserve({ computerId: "c", holder: "updater", purpose: "recovery" }));
    expect(again?.message).toContain("releaseInterrupted");
    expect((await errorOf(engine.renew(reservation)))?.code).toBe("LEASE_LOST");

    expect(await engine.releaseInterrupted({ id: reservation.id, workersStopped: true })).toBe(true);
    expect(await engine.releaseInterrupted({ id: reservation.id, workersStopped: true })).toBe(false);
    expect(await engine.getReservation("c")).toBeUndefined();
    const next = await engine.reserve({ computerId: "c", holder: "other", purpose: "stop" });
    expect(next.token).toBe(reservation.token + 1);
    // The old id cannot release the new reservation.
    expect(await engine.releaseInterrupted({ id: reservation.id, workersStopped: true })).toBe(false);
    expect((await engine.getReservation("c"))?.id).toBe(next.id);
  });

  it("require workersStopped: true and a known id", async () => {
    const { engine } = manualEngine();
    const r = await engine.reserve({ computerId: "c", holder: "u", purpose: "stop" });
    const bad = await errorOf(engine.releaseInterrupted({ id: r.id, workersStopped: false as true }));
    expect(bad?.code).toBe("INVALID_ARGUMENT");
    expect(bad?.message).toContain("workersStopped");
    expect((await errorOf(engine.releaseInterrupted({ id: "reservation:zz:9", workersStopped: true })))?.code).toBe(
      "NOT_FOUND",
    );
    expect((await errorOf(engine.releaseInterrupted({ id: "nonsense", workersStopped: true })))?.code).toBe(
      "INVALID_ARGUMENT",
    );
  });
});
