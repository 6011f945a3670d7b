import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { SandboxProvider } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";

// A bot starts a loop in the background under its run's lease; the worker
// then stalls past the lease and a newer run of the same bot takes over. The
// loop must stop: nothing started under a stale lease keeps acting.
const TTL_MS = 1000;
const docker = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: processes of a stale lease",
);

/** Blocks this process's event loop, as a stalled worker would. */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function staleLoopStops(provider: SandboxProvider, dataDir: string): Promise<void> {
  const stateStore = new MemoryStateStore();
  const make = () =>
    createComputerRuntime({
      provider,
      stateStore,
      homeStore: new LocalAgentHomeStore({ dataDir }),
      leaseTtlMs: TTL_MS,
    });
  const workspaceId = `stale-${Date.now().toString(36)}`;
  const first = make().startRun({ workspaceId, botId: "alpha" });
  const machine = await first.machine();
  await machine.exec({
    shell: "nohup sh -c 'while :; do echo tick >> ticks; sleep 0.05; done' >/dev/null 2>&1 &",
    cwd: first.workdir,
  });
  const ticks = async (m = machine) =>
    Number(
      Buffer.from((await m.files.read(`${first.workdir}/ticks`)).buffer)
        .toString()
        .split("\n").length,
    );
  await sleep(300);
  expect(await ticks()).toBeGreaterThan(1);
  stall(TTL_MS * 2);
  const second = make().startRun({ workspaceId, botId: "alpha" });
  const current = await second.machine();
  const atTakeover = await ticks(current);
  await sleep(500);
  expect(await ticks(current)).toBe(atTakeover);
  await first.end("failed");
  await second.end("completed");
}

describe("hostile bot: processes of a stale lease", () => {
  it("on the fake provider, a newer run's start stops the loop the stale run left", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "stale-lease-"));
    await staleLoopStops(createFakeProvider(), dataDir);
  }, 60_000);

  if (!docker.missing) {
    it("on Docker, a newer run's start stops the loop the stale run left", async () => {
      const dataDir = await temporaryDataDir();
      await staleLoopStops(docker.provider({ dataDir }), dataDir);
    }, 120_000);
  }
});
