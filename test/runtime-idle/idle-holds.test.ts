import { spawnSync } from "node:child_process";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { BACKGROUND_MARKER_DIR } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 46: idle suspension understands real work. On the default Docker
// computer, a job the bot marked as background work (a process holding
// `<home>/.agent-computer/background/<job>.marker`, found by the image's
// scanner) keeps the computer up past the idle time; once the job ends,
// the next idle time suspends it. The clock is injected; the scan is real.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "runtime idle on docker",
);

if (!env.missing) {
  describe("runtime idle on docker", () => {
    let now = Date.now();
    const cleanup: (() => Promise<unknown>)[] = [];
    afterAll(async () => {
      for (const step of cleanup.reverse()) await step().catch(() => {});
    });

    it("keeps a computer with marked background work up past the idle time, and suspends it once the work ends", async () => {
      const dataDir = await temporaryDataDir();
      const runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 60_000,
        clock: () => now,
      });
      const events: ComputerEvent[] = [];
      runtime.on((event) => void events.push(event));
      const workspaceId = `idle-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      cleanup.push(() => runtime.deleteComputer(computerId));

      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      const machine = await run.machine();
      const started = await machine.exec({
        shell: `mkdir -p ~/${BACKGROUND_MARKER_DIR}
setsid sh -c 'exec 9>>"$HOME/${BACKGROUND_MARKER_DIR}/build.marker"; exec sleep 600' >/dev/null 2>&1 < /dev/null &`,
      });
      expect(started.exitCode).toBe(0);
      await run.end("completed");

      now += 61_000;
      expect(await runtime.suspendIdle()).toEqual([]);
      expect(events.at(-1)).toMatchObject({
        type: "suspension-deferred",
        computerId,
        detail: { reason: "background-work", jobs: "build" },
      });
      // The look counted as use: within the idle time after it, nothing is suspended (nor scanned).
      now += 30_000;
      expect(await runtime.suspendIdle()).toEqual([]);

      // The job ends (killed from outside: the run's handle went with its lease); the idle time
      // after the last look suspends the computer. pkill returns once the signal is sent, and a
      // process the signal has not yet ended still holds its marker (clean-clone run 41, under
      // load: the scan deferred again), so the job has ended when no such process is left.
      const ref = (await runtime.leases.getComputer(computerId))?.providerRef ?? "";
      const killed = spawnSync("docker", [
        "exec",
        "-u",
        "1000",
        ref.slice("docker:".length),
        "sh",
        "-c",
        "pkill -f 'sleep 60[0]'; for i in $(seq 1 100); do pgrep -f 'sleep 60[0]' >/dev/null || exit 0; sleep 0.05; done; exit 1",
      ]);
      expect(killed.status).toBe(0);
      now += 31_000;
      expect(await runtime.suspendIdle(), JSON.stringify(events.at(-1))).toEqual([computerId]);
      expect(events.at(-1)).toMatchObject({ type: "suspending", computerId, detail: { reason: "idle" } });
      expect(events.at(-1)?.detail.backgroundScan).toBeUndefined();
    }, 180_000);
  });
}
