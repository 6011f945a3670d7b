import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";

// The runtime on real Docker computers. Docker mounts the home from the same
// DATA_DIR the local home store keeps, so a replacement finds the home in
// place (by design) and checkpoints only advance the revision marker.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "computer runtime on Docker",
);

if (!env.missing) {
  describe("computer runtime on Docker", () => {
    it("replaces a container destroyed from outside; the record's revision and run records say what happened", async () => {
      const dataDir = await temporaryDataDir();
      const events: ComputerEvent[] = [];
      const runtime = createComputerRuntime({
        provider: dockerProvider({ docker: env.docker, image: env.image, dataDir }),
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 0,
        onEvent: (e) => events.push(e),
      });
      const workspaceId = `docker-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      const first = runtime.startRun({ workspaceId, botId: "alpha" });
      const machine = await first.machine();
      await machine.exec({ shell: "echo kept > report.txt", cwd: first.workdir });
      await first.end("completed");
      const saved = await runtime.leases.getComputer(computerId);
      expect(saved?.revision).toBe(1);
      expect(events.find((e) => e.type === "checkpointing")?.detail).toMatchObject({ revision: 1, mounted: true });

      const containerId = String(saved?.providerRef).slice("docker:".length);
      await env.docker.getContainer(containerId).remove({ force: true });

      events.length = 0;
      const second = runtime.startRun({ workspaceId, botId: "alpha" });
      const replacement = await second.machine();
      expect(Buffer.from(await replacement.files.read("bots/alpha/report.txt")).toString()).toBe("kept\n");
      expect(events.map((e) => e.type)).toEqual(["provisioning", "restoring", "replaced", "ready"]);
      await second.end("completed");

      const record = await runtime.leases.getComputer(computerId);
      expect(record?.providerRef).not.toBe(saved?.providerRef);
      expect(record?.revision).toBe(2);
      expect(record?.runs.map((r) => r.endReason)).toEqual(["gone", undefined]);
      const current = String(record?.providerRef).slice("docker:".length);
      await env.docker.getContainer(current).remove({ force: true });
    }, 180_000);
  });
}
