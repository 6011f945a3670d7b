import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, SaidRecorder, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it, vi } from "vitest";
import { railwayProvider } from "../src/index.js";
import { railwayTestEnvironment, TEST_TOKEN } from "./railway-test-environment.js";

// The token and the shell tokens appear in no log line, event, error,
// console line, computer environment, exported home or saved checkpoint;
// a refused token is an error, never "gone"; 429 and cut answers are
// retried within the deadline; a create whose answer was lost is found by
// its name, not made twice; only the provider's services are listed.
const env = await railwayTestEnvironment("railway: secrets and faults");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  let machine: Machine;

  describe("railway: secrets and faults", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("never says the token or a shell token", async () => {
      const record = new SaidRecorder();
      const shellTokens: string[] = [];
      const spied = vi.spyOn(env.emulator, "shellToken");
      const restoreConsole = record.captureConsole();
      try {
        const dataDir = await temporaryDataDir();
        const runtime = createComputerRuntime({
          provider,
          stateStore: new MemoryStateStore(),
          homeStore: new LocalAgentHomeStore({ dataDir }),
          logger: record.logger,
          onEvent: record.onEvent,
        });
        const run = runtime.startRun({ workspaceId: `secrets-${Date.now()}`, botId: "alpha" });
        const computer = await run.machine();
        owned.push(computer);
        await computer.files.write("notes.txt", new TextEncoder().encode("hello"), record.ctx());
        const desktop = await (computer.openDesktop as NonNullable<Machine["openDesktop"]>)("alpha", record.ctx());
        await desktop.observe(record.ctx());
        await desktop.release(record.ctx());

        // A service that echoes the secrets back in its error text.
        const echoedToken = String(spied.mock.results.at(-1)?.value);
        env.emulator.inject({
          method: "POST",
          path: /^graphql:serviceInstance$/,
          status: 200,
          message: `bad request for Authorization: Bearer ${TEST_TOKEN} (shell ${echoedToken})`,
        });
        const echoed = await failureOf(computer.exec({ argv: ["true"] }, record.ctx()));
        expect(AgentComputerError.is(echoed, "INVALID_ARGUMENT")).toBe(true);
        record.noteError(echoed);

        // A refused token: an error, never "gone", naming no token.
        const refused = railwayProvider({
          token: `${TEST_TOKEN}-revoked`,
          projectId: env.emulator.projectId,
          environmentId: env.emulator.environmentId,
          endpoint: env.emulator.endpoint,
        });
        const refusal = await failureOf(refused.reconnect(computer.ref, record.ctx()));
        expect(AgentComputerError.is(refusal, "UNAVAILABLE")).toBe(true);
        expect((refusal as AgentComputerError).retryable).toBe(false);
        record.noteError(refusal);
        record.noteError(
          await failureOf(refused.provision({ computerId: "refused", homeKey: "refused" }, record.ctx())),
        );

        // The computer's environment and an exported home.
        await record.noteMachine(computer);

        // The provider's own log lines, and the checkpoint the run saves at its end.
        const direct = await provider.provision(
          { computerId: "direct", homeKey: `direct-${Date.now()}` },
          record.ctx(),
        );
        await direct.stop(record.ctx());
        await direct.destroy(record.ctx());
        await run.end("completed");
        await record.noteFiles(dataDir);
        shellTokens.push(...spied.mock.results.map((r) => String(r.value)));
      } finally {
        spied.mockRestore();
        restoreConsole();
      }
      expect(shellTokens.length).toBeGreaterThan(3);
      record.expectNeverSaid([TEST_TOKEN, ...shellTokens], ["service provisioned", "[redacted]"]);
    }, 180_000);

    it("retries 429 and cut answers within the deadline, then says UNAVAILABLE; a deleted service is gone", async () => {
      machine = await provider.provision({ computerId: "faults", homeKey: `faults-${Date.now()}` });
      owned.push(machine);
      env.emulator.inject({ method: "POST", path: /^graphql:serviceInstance$/, status: 429, times: 2 });
      env.emulator.inject({ method: "POST", path: /^graphql:generateShellToken$/, status: 0, times: 2 });
      expect(new TextDecoder().decode((await machine.exec({ shell: "printf ok" })).stdout)).toBe("ok");
      expect(env.emulator.pendingFaults).toBe(0);

      const impatient = env.provider({ retryMs: 1_000 });
      env.emulator.inject({ method: "POST", path: /^graphql:serviceInstance$/, status: 429, times: 1_000 });
      const started = Date.now();
      const failure = await failureOf(impatient.reconnect(machine.ref));
      env.emulator.clearFaults();
      expect(AgentComputerError.is(failure, "UNAVAILABLE")).toBe(true);
      expect((failure as AgentComputerError).retryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000);

      // A create whose answer was lost: the service of that name is adopted, not made twice.
      const count = () => [...env.emulator.services.values()].filter((s) => !s.deleted).length;
      const before = count();
      env.emulator.inject({ method: "POST", path: /^graphql:serviceCreate$/, status: 0, after: true });
      const once = await provider.provision({ computerId: "once", homeKey: `once-${Date.now()}` });
      owned.push(once);
      expect(count()).toBe(before + 1);
      expect(await provider.list({ labels: { "agent-computer.org/computer-id": "once" } })).toEqual([once.ref]);

      // A deploy whose answer was lost is followed, not doubled.
      await once.stop();
      const deployments = () => env.emulator.services.get(once.ref.slice("railway:".length))?.deployments.length ?? 0;
      const deployed = deployments();
      env.emulator.inject({ method: "POST", path: /^graphql:serviceInstanceDeployV2$/, status: 0, after: true });
      expect((await once.exec({ argv: ["true"] })).exitCode).toBe(0);
      expect(deployments()).toBe(deployed + 1);

      await env.emulator.deleteBehindTheProvider(once.ref.slice("railway:".length));
      expect(await provider.reconnect(once.ref)).toBe("gone");
      expect(AgentComputerError.is(await failureOf(once.exec({ argv: ["true"] })), "PROVIDER_GONE")).toBe(true);
    }, 180_000);

    it("a provision that fails after its service was made deletes the service and its volume", async () => {
      const live = () => [...env.emulator.services.values()].filter((s) => !s.deleted).length;
      const [services, volumes] = [live(), env.emulator.volumes.size];
      // A deployment that fails (an image the engine does not have): FAILED, never running.
      const broken = railwayProvider(
        {
          token: TEST_TOKEN,
          projectId: env.emulator.projectId,
          environmentId: env.emulator.environmentId,
          endpoint: env.emulator.endpoint,
          execUrl: env.emulator.execUrl,
          image: "agent-computer-test/no-such-image:0",
          pollMs: 200,
        },
        {},
      );
      const failed = await failureOf(broken.provision({ computerId: "broken", homeKey: `broken-${Date.now()}` }));
      expect(failed).toMatchObject({ name: "AgentComputerError", code: "UNAVAILABLE" });
      expect(String((failed as Error).message)).toMatch(/FAILED/);
      // A refused call midway (the image's source): the same cleanup.
      env.emulator.inject({
        method: "POST",
        path: /^graphql:serviceInstanceUpdate$/,
        status: 200,
        message: "Invalid image",
      });
      const refused = await failureOf(provider.provision({ computerId: "refused", homeKey: `refused-${Date.now()}` }));
      expect(refused).toMatchObject({ name: "AgentComputerError", code: "INVALID_ARGUMENT" });
      expect(live()).toBe(services);
      expect(env.emulator.volumes.size).toBe(volumes);
    }, 120_000);

    it("lists its computers across pages of a project with many services, and no one else's", async () => {
      const foreign = env.emulator.addForeignServices(150);
      const all = await provider.list({ labels: {} });
      expect(all.some((ref) => foreign.includes(ref.slice("railway:".length)))).toBe(false);
      expect(all).toContain(machine.ref);
      expect(await provider.reconnect(`railway:${foreign[0]}`)).toBe("gone");
      const name = env.emulator.nameOf(machine.ref.slice("railway:".length)) as string;
      expect(name.length).toBeLessThanOrEqual(63);
      // `u`: the display a second user, the default (service-names.ts).
      expect(name).toMatch(/^ac1-s\d+u(-[0-9a-f]{6})+$/);
    }, 60_000);
  });
}
