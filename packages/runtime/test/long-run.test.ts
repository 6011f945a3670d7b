import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { describe, expect, it } from "vitest";

// Runs that last longer than a lease: with a lease TTL of one second, a run
// renews about every 333 ms; every handle it opened on its first calls must
// follow those renewals (docs/architecture.md §6).
const TTL_MS = 1000;

async function setup() {
  const dataDir = await mkdtemp(join(tmpdir(), "long-run-"));
  const provider = createFakeProvider();
  const stateStore = new MemoryStateStore();
  const make = () =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      leaseTtlMs: TTL_MS,
    });
  return { make, provider };
}

/** A page the run's browser can load. */
async function servePage(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) =>
    res.end("<html><body><button>Go</button><a href='/b'>Next</a></body></html>"),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Blocks this process's event loop, as a stalled worker (a long GC, a paused VM) would. */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe("a run longer than its lease", () => {
  it("keeps using its shell, desktop, page browser and screen endpoint for 20 TTLs without one lease error", async () => {
    const { make } = await setup();
    const { url, server } = await servePage();
    const runtime = make();
    const run = runtime.startRun({ workspaceId: "long", botId: "alpha" });
    const desktop = await run.desktop();
    const page = desktop.pageBrowser;
    expect(page).toBeDefined();
    const started = performance.now();
    let steps = 0;
    while (performance.now() - started < 20 * TTL_MS) {
      const machine = await run.machine();
      expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
      await desktop.act([{ type: "move", x: 10 + (steps % 50), y: 10 }]);
      await desktop.observe();
      await page?.navigate(url);
      await page?.snapshot();
      const endpoint = await desktop.screenEndpoint("view");
      await desktop.revokeEndpoint?.(endpoint.id);
      steps++;
      await sleep(TTL_MS / 4);
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(20 * TTL_MS);
    expect(steps).toBeGreaterThan(20);
    await run.end("completed");
    server.close();
  }, 60_000);

  it("keeps renewing while one call runs for 4 TTLs, then the run's desktop still acts", async () => {
    const { make } = await setup();
    const run = make().startRun({ workspaceId: "inflight", botId: "alpha" });
    const desktop = await run.desktop();
    const machine = await run.machine();
    const started = performance.now();
    await desktop.act([{ type: "wait", ms: 4 * TTL_MS }]);
    expect((await machine.exec({ argv: ["sleep", String((3 * TTL_MS) / 1000)] })).exitCode).toBe(0);
    expect(performance.now() - started).toBeGreaterThanOrEqual(7 * TTL_MS);
    await desktop.act([{ type: "move", x: 3, y: 3 }]);
    await run.end("completed");
    // Ended: the lease is released, so the bot's next run starts at once.
    const next = make().startRun({ workspaceId: "inflight", botId: "alpha" });
    await (await next.machine()).exec({ argv: ["true"] });
    await next.end("completed");
  }, 60_000);

  it("fails every handle with the same FENCED_OUT once the lease is really lost, and a new run takes over", async () => {
    const { make } = await setup();
    const first = make();
    const run = first.startRun({ workspaceId: "lost", botId: "alpha" });
    const machine = await run.machine();
    const desktop = await run.desktop();
    const page = desktop.pageBrowser!;
    // The worker stalls past its lease: no renewal can run, the lease expires.
    stall(TTL_MS * 2);
    // Another worker's run for the same bot gets the lease with a newer token.
    const second = make().startRun({ workspaceId: "lost", botId: "alpha" });
    await (await second.machine()).exec({ argv: ["true"] });
    const codes = await Promise.all(
      [
        () => machine.exec({ argv: ["true"] }),
        () => machine.files.write("bots/alpha/late.txt", new Uint8Array([1])),
        () => desktop.act([{ type: "move", x: 1, y: 1 }]),
        () => page.navigate("http://127.0.0.1:9/late"),
        () => page.act({ type: "scroll", direction: "down" } as never),
        () => run.machine().then((m) => m.exec({ argv: ["true"] })),
      ].map((call) =>
        call().then(
          () => "ok",
          (error: { code?: string; message?: string }) =>
            `${error.code}: ${/end this run and start a new one/.test(error.message ?? "")}`,
        ),
      ),
    );
    // A newer holder has the key: FENCED_OUT from every handle, saying what to do.
    expect(codes).toEqual(Array(6).fill("FENCED_OUT: true"));
    await run.end("failed");
    await second.end("completed");
  }, 60_000);
});
