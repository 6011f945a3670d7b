import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { SandboxProvider } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { type ComputerEvent, createComputerRuntime } from "@agent-computer/runtime";
import { createFakeProvider } from "@agent-computer/testing";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// A deployment that changes its provider kind (the fake of the quickstart,
// then Docker, then back): a computer recorded on the other kind is
// replaced on the configured provider with its latest checkpoint restored,
// never reconnected by a ref of the other kind. The machine left on the old
// provider is the operator's to remove: this runtime cannot reach it.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "runtime: a change of provider kind",
);

if (!env.missing) {
  describe("runtime: a change of provider kind", () => {
    const cleanup: (() => Promise<unknown>)[] = [];
    afterAll(async () => {
      for (const step of cleanup.reverse()) await step().catch(() => {});
    });

    it("replaces a fake computer with a Docker one and back, restoring the home each time", async () => {
      const dataDir = await temporaryDataDir();
      // What the deployment keeps across the change: its records and its homes.
      const stateStore = new MemoryStateStore();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const fakeRoot = await temporaryDataDir();
      const events: ComputerEvent[] = [];
      const reconnects: string[] = [];
      /** A runtime on `provider`, recording the refs it asks that provider to reconnect (a wrapper; the call goes through). */
      const runtimeOn = (provider: SandboxProvider) => {
        const reconnect = provider.reconnect.bind(provider);
        provider.reconnect = (ref, ctx) => {
          reconnects.push(ref);
          return reconnect(ref, ctx);
        };
        return createComputerRuntime({ provider, stateStore, homeStore, idleMs: 0, onEvent: (e) => events.push(e) });
      };
      const workspaceId = `kind-${Date.now().toString(36)}`;

      // 1. On the fake provider: the bot writes a file, the run's end checkpoints it.
      const onFake = runtimeOn(createFakeProvider({ root: fakeRoot }));
      const computerId = onFake.computerIdFor({ workspaceId, botId: "alpha" });
      const first = onFake.startRun({ workspaceId, botId: "alpha" });
      const fakeMachine = await first.machine();
      cleanup.push(() => fakeMachine.destroy());
      expect((await fakeMachine.exec({ shell: "echo from-fake > notes.txt", cwd: first.workdir })).exitCode).toBe(0);
      await first.end("completed");
      expect((await onFake.leases.getComputer(computerId))?.providerKind).toBe("fake");

      // 2. The same deployment on Docker: a new container with the fake's file in it.
      events.length = 0;
      reconnects.length = 0;
      const docker = dockerProvider({ docker: env.docker, image: env.image, dataDir });
      const onDocker = runtimeOn(docker);
      const second = onDocker.startRun({ workspaceId, botId: "alpha" });
      const dockerMachine = await second.machine();
      // The run's machine refuses calls once the run ends: the container goes through the provider's own.
      cleanup.push(async () => {
        const machine = await docker.reconnect(dockerMachine.ref);
        if (machine !== "gone") await machine.destroy();
      });
      expect(dockerMachine.ref).toMatch(/^docker:/);
      expect(reconnects).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(["provisioning", "restoring", "replaced", "ready"]);
      expect(events.find((e) => e.type === "replaced")?.detail).toMatchObject({ reason: "replaced" });
      const onDockerRead = await dockerMachine.exec({ shell: "cat notes.txt", cwd: second.workdir });
      expect(Buffer.from(onDockerRead.stdout).toString()).toBe("from-fake\n");
      // The bot changes the file it brought along (the store wrote it as this process's user).
      const appended = await dockerMachine.exec({ shell: "echo from-docker >> notes.txt", cwd: second.workdir });
      expect(appended.exitCode, Buffer.from(appended.stderr).toString()).toBe(0);
      await second.end("completed");
      let record = await onDocker.leases.getComputer(computerId);
      expect(record).toMatchObject({ providerKind: "docker", providerRef: dockerMachine.ref, revision: 2 });
      expect(record?.runs.map((r) => r.endReason)).toEqual(["replaced", undefined]);
      // The fake machine is left as it was: the Docker runtime cannot reach it.
      expect(Buffer.from(await fakeMachine.files.read(`${first.workdir}/notes.txt`)).toString()).toBe("from-fake\n");

      // 3. Back on the fake provider, whose first machine still runs: a new one, with Docker's change.
      // The Docker container stays up meanwhile, as an operator's old machines would.
      events.length = 0;
      reconnects.length = 0;
      const backOnFake = runtimeOn(createFakeProvider({ root: fakeRoot }));
      const third = backOnFake.startRun({ workspaceId, botId: "alpha" });
      const again = await third.machine();
      expect(again.ref).toMatch(/^fake:/);
      expect(again.ref).not.toBe(fakeMachine.ref);
      expect(reconnects).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(["provisioning", "restoring", "replaced", "ready"]);
      expect(Buffer.from(await again.files.read(`${third.workdir}/notes.txt`)).toString()).toBe(
        "from-fake\nfrom-docker\n",
      );
      await third.end("completed");
      record = await backOnFake.leases.getComputer(computerId);
      expect(record).toMatchObject({ providerKind: "fake", providerRef: again.ref, revision: 3 });
      expect(record?.runs.map((r) => r.endReason)).toEqual(["replaced", "replaced", undefined]);

      // Unchanged kind: a new runtime reconnects the machine the record names.
      events.length = 0;
      reconnects.length = 0;
      const sameKind = runtimeOn(createFakeProvider({ root: fakeRoot }));
      const fourth = sameKind.startRun({ workspaceId, botId: "beta" });
      expect((await fourth.machine()).ref).toBe(again.ref);
      expect(reconnects).toEqual([again.ref]);
      expect(events.map((e) => [e.type, e.detail.how])).toEqual([["ready", "reconnected"]]);
      await fourth.end("completed");
    }, 240_000);
  });
}
