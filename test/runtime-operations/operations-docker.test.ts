import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { MemoryStateStore } from "@agent-computer/leases";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { COMPUTER_LABEL, createComputerRuntime, DEPLOYMENT_LABEL } from "@agent-computer/runtime";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Update, recovery and the reconciler on real Docker computers. Docker
// mounts the home from DATA_DIR, so a replacement finds it in place; what
// these tests prove is that records, reservations and containers move
// together, and that a failed update harms nothing.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "computer operations on Docker",
);
const deployment = `ops-${Date.now().toString(36)}`;
/** The reconciler test's own deployment: it must not see the update test's machines. */
const reconciling = `${deployment}-rec`;
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

/** Whether the engine still has the container behind a docker ref. */
async function exists(ref: string | null | undefined): Promise<boolean> {
  if (!ref) return false;
  return env.docker
    .getContainer(ref.slice("docker:".length))
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

if (!env.missing) {
  describe("computer operations on Docker", () => {
    afterAll(async () => {
      for (const dep of [deployment, reconciling, `${reconciling}-other`]) {
        const found = await env.docker.listContainers({
          all: true,
          filters: JSON.stringify({ label: [`${DEPLOYMENT_LABEL}=${dep}`] }),
        });
        await Promise.all(
          found.map((c) =>
            env.docker
              .getContainer(c.Id)
              .remove({ force: true })
              .catch(() => {}),
          ),
        );
      }
    });

    it("an update keeps the files; one whose new machine cannot start leaves the computer recoverable", async () => {
      const dataDir = await temporaryDataDir();
      const stateStore = new MemoryStateStore();
      const homeStore = new LocalAgentHomeStore({ dataDir });
      const provider = dockerProvider({ docker: env.docker, image: env.image, dataDir });
      const runtime = createComputerRuntime({ provider, stateStore, homeStore, idleMs: 0, deployment });
      const workspaceId = `upd-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      const machine = await run.machine();
      await machine.exec({ shell: "echo before-update > report.txt", cwd: run.workdir });
      await run.end("completed");
      const first = await runtime.leases.getComputer(computerId);

      const updated = await runtime.operations.waitFor(
        (await runtime.operations.requestUpdate({ computerId, owner: "operator" })).id,
        { timeoutMs: 120_000 },
      );
      expect(updated.status).toBe("succeeded");
      expect(updated.stages.map((s) => s.name)).toEqual([
        "checkpointing",
        "provisioning",
        "restoring",
        "switching",
        "removing-old",
      ]);
      const second = await runtime.leases.getComputer(computerId);
      expect(second?.providerRef).not.toBe(first?.providerRef);
      expect(await exists(first?.providerRef)).toBe(false);
      expect(second?.runs.map((r) => r.endReason)).toEqual(["replaced", undefined]);
      const after = runtime.startRun({ workspaceId, botId: "alpha" });
      const replacement = await after.machine();
      expect(replacement.ref).toBe(second?.providerRef);
      expect(text(await replacement.files.read("bots/alpha/report.txt"))).toBe("before-update\n");
      await replacement.exec({ shell: "echo after-update >> report.txt", cwd: after.workdir });
      await after.end("completed");

      // The configured image is now one the engine does not have: the new machine cannot start.
      const broken = createComputerRuntime({
        provider,
        stateStore,
        homeStore,
        idleMs: 0,
        deployment,
        spec: { image: "agent-computer/missing-image:none" },
      });
      const failed = await broken.operations.waitFor(
        (await broken.operations.requestUpdate({ computerId, owner: "operator" })).id,
        { timeoutMs: 120_000 },
      );
      expect(failed.status).toBe("failed");
      expect(failed.stages.map((s) => `${s.name}:${s.status}`)).toEqual(["checkpointing:done", "provisioning:failed"]);
      expect(failed.warnings.join(" ")).toMatch(/stays restorable.*may be lost/);
      const kept = await runtime.leases.getComputer(computerId);
      expect(kept?.providerRef).toBe(second?.providerRef);
      expect(await exists(kept?.providerRef)).toBe(true);
      expect(await runtime.leases.getReservation(computerId)).toBeUndefined();
      expect(kept?.revision).toBe((await homeStore.latest(computerId))?.revision);

      const recovered = await runtime.operations.waitFor(
        (await runtime.operations.requestRecovery({ computerId, owner: "operator" })).id,
        { timeoutMs: 120_000 },
      );
      expect(recovered.status).toBe("succeeded");
      const final = await runtime.leases.getComputer(computerId);
      expect(final?.providerRef).not.toBe(kept?.providerRef);
      expect(await exists(kept?.providerRef)).toBe(false);
      const check = runtime.startRun({ workspaceId, botId: "alpha" });
      const restored = await check.machine();
      expect(text(await restored.files.read("bots/alpha/report.txt"))).toBe("before-update\nafter-update\n");
      await check.end("completed");
      expect(await runtime.deleteComputer(computerId)).toBe(true);
      expect(await exists(final?.providerRef)).toBe(false);
    }, 300_000);

    it("a mode change moves a bot's folder into a Private container's whole home, and back", async () => {
      const dataDir = await temporaryDataDir();
      const provider = dockerProvider({ docker: env.docker, image: env.image, dataDir });
      const runtime = createComputerRuntime({
        provider,
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 0,
        deployment,
      });
      const workspaceId = `mode-${Date.now().toString(36)}`;
      const bot = { workspaceId, botId: "alpha" };
      const team = runtime.startRun(bot);
      const teamMachine = await team.machine();
      await teamMachine.exec({
        shell: "mkdir -p sub && echo mine > sub/notes.txt && ln -s sub/notes.txt link",
        cwd: team.workdir,
      });
      await teamMachine.exec({
        shell:
          "mkdir -p .browser-profiles/alpha bots/beta && echo '{}' > .browser-profiles/alpha/Prefs && echo b > bots/beta/b.txt",
      });
      await team.end("completed");

      const toPrivate = await runtime.operations.waitFor(
        (await runtime.operations.requestModeChange({ ...bot, to: "private", owner: "operator" })).id,
        { timeoutMs: 180_000 },
      );
      expect(toPrivate.status).toBe("succeeded");
      expect(await runtime.botMode(bot)).toBe("private");
      const own = runtime.startRun({ ...bot, private: true });
      const ownMachine = await own.machine();
      // The bot's shell starts where its files are: the root of the Private home.
      const listed = await ownMachine.exec({
        shell: "cat sub/notes.txt link .browser-profiles/alpha/Prefs && ls -A",
        cwd: own.workdir,
      });
      expect(text(listed.stdout)).toBe("mine\nmine\n{}\n.browser-profiles\nlink\nsub\n");
      await ownMachine.exec({ shell: "echo later > later.txt", cwd: own.workdir });
      await own.end("completed");
      const left = await (await runtime.runningMachine(`team-${workspaceId}`))?.exec({
        shell: "ls -A bots .browser-profiles",
      });
      expect(text(left?.stdout ?? new Uint8Array())).toBe(".browser-profiles:\n\nbots:\nbeta\n");

      const privateRef = (await runtime.leases.getComputer(own.computerId))?.providerRef;
      const toTeam = await runtime.operations.waitFor(
        (await runtime.operations.requestModeChange({ ...bot, to: "team", owner: "operator" })).id,
        { timeoutMs: 180_000 },
      );
      expect(toTeam.status).toBe("succeeded");
      expect(await exists(privateRef)).toBe(false);
      const back = runtime.startRun(bot);
      const backMachine = await back.machine();
      const found = await backMachine.exec({ shell: "cat later.txt link && ls -A", cwd: back.workdir });
      expect(text(found.stdout)).toBe("later\nmine\nlater.txt\nlink\nsub\n");
      await back.end("completed");
      expect(await runtime.deleteComputer(`team-${workspaceId}`)).toBe(true);
    }, 300_000);

    it("the reconciler removes orphans of its deployment only and closes runs of vanished containers", async () => {
      const dataDir = await temporaryDataDir();
      const provider = dockerProvider({ docker: env.docker, image: env.image, dataDir });
      const runtime = createComputerRuntime({
        provider,
        stateStore: new MemoryStateStore(),
        homeStore: new LocalAgentHomeStore({ dataDir }),
        idleMs: 0,
        deployment: reconciling,
      });
      const workspaceId = `rec-${Date.now().toString(36)}`;
      const computerId = runtime.computerIdFor({ workspaceId, botId: "alpha" });
      const run = runtime.startRun({ workspaceId, botId: "alpha" });
      const owned = await run.machine();
      await run.end("completed");
      const orphan = await provider.provision({
        computerId: "team-ghost",
        homeKey: `ghost-${workspaceId}`,
        labels: { [DEPLOYMENT_LABEL]: reconciling, [COMPUTER_LABEL]: "team-ghost" },
      });
      const foreign = await provider.provision({
        computerId: "team-foreign",
        homeKey: `foreign-${workspaceId}`,
        labels: { [DEPLOYMENT_LABEL]: `${reconciling}-other`, [COMPUTER_LABEL]: "team-foreign" },
      });

      const report = await runtime.reconcile({ orphanGraceMs: 0 });
      expect(report.destroyed).toEqual([orphan.ref]);
      expect(await exists(orphan.ref)).toBe(false);
      expect(await exists(foreign.ref)).toBe(true);
      expect(await exists(owned.ref)).toBe(true);
      expect(report.reconciled).toEqual([]);

      await env.docker.getContainer(owned.ref.slice("docker:".length)).remove({ force: true });
      expect((await runtime.reconcile({ orphanGraceMs: 0 })).reconciled).toEqual([computerId]);
      const record = await runtime.leases.getComputer(computerId);
      expect(record?.runs.at(-1)?.endReason).toBe("reconciled");
      expect(record?.providerRef).toBeNull();
      await foreign.destroy();
    }, 300_000);
  });
}
