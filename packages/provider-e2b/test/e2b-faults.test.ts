import { type Logger, type Machine, opContext, type ProviderRef } from "@agent-computer/core";
import { END_AFTER_KILL_MS, KILL_TREE_LIMIT_MS } from "@agent-computer/core/provider-utils";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2bProvider } from "../src/index.js";
import { e2bTestEnvironment, TEST_TEMPLATE } from "./e2b-test-environment.js";

// What E2B does wrong, through the real SDK: storms on the control plane,
// an envd stream cut mid-command, a refused key, a missing key or template,
// a sandbox that vanished; and no key or token in anything the provider says.
const env = await e2bTestEnvironment("e2b: faults");
if (!env.missing) {
  const { emulator } = env;
  const provider = env.provider({ controlPlaneDeadlineMs: 1500 });
  const owned: Machine[] = [];
  let machine: Machine;
  const provision = async (name: string, p = provider) => {
    const m = await p.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
    owned.push(m);
    return m;
  };
  const idOf = (m: Machine) => m.ref.slice("e2b:".length);
  const wrongKey = () =>
    e2bProvider(
      {
        apiKey: "e2b_not-the-key",
        template: TEST_TEMPLATE,
        apiUrl: emulator.apiUrl,
        sandboxUrl: emulator.sandboxUrl,
        controlPlaneDeadlineMs: 1500,
      },
      {},
    );

  describe("e2b: faults", () => {
    beforeAll(async () => {
      machine = await provision("faults-main");
    }, 60_000);
    afterAll(async () => {
      emulator.clearFaults();
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    for (const status of [503, 429]) {
      it(`retries a ${status} storm on the control plane within the deadline, then says UNAVAILABLE`, async () => {
        const before = emulator.calls.length;
        emulator.injectControlPlaneFault({ status, path: /^\/v2\/sandboxes$/ });
        const started = performance.now();
        const error = await failureOf(provider.provision({ computerId: "storm", homeKey: `storm-${status}` }));
        const elapsed = performance.now() - started;
        emulator.clearFaults();
        expect(error.code).toBe("UNAVAILABLE");
        expect(error.retryable).toBe(true);
        expect(error.message).toContain(String(status));
        const attempts = emulator.calls.slice(before).filter((c) => c.path === "/v2/sandboxes" && c.status === status);
        expect(attempts.length).toBeGreaterThan(2);
        expect(elapsed).toBeLessThan(1500 + 2500);
        // A short storm is ridden out: the call succeeds once the service answers again.
        emulator.injectControlPlaneFault({ status, count: 2, path: /^\/v2\/sandboxes$/ });
        const survived = await provision(`storm-${status}-short`);
        expect((await survived.exec({ argv: ["true"] })).exitCode).toBe(0);
        await survived.destroy();
      }, 60_000);
    }

    it("ends a command when its output closes, as envd's Wait does: a child holding it is waited for", async () => {
      // The emulator once ended a command shortly after its leader exited, which cut the
      // last bytes of a large read under load; envd waits for the output pipes instead.
      const result = await machine.exec({ shell: "(sleep 1; echo late) & echo early" });
      expect(result.exitCode).toBe(0);
      expect(new TextDecoder().decode(result.stdout)).toBe("early\nlate\n");
    });

    it("gives a typed error and leaves no orphan when the envd stream drops mid-command", async () => {
      const probe = `orphan-probe-${Date.now()}`;
      emulator.dropNextStreams(1, 1);
      const error = await failureOf(
        machine.exec({ shell: `echo started; exec -a ${probe} sleep 60 & sleep 60; : ${probe}` }),
      );
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.message).toMatch(/broke while the command ran.*processes were killed/);
      expect(await emulator.countProcesses(idOf(machine), probe)).toBe(0);
      expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
    }, 60_000);

    it("kills by its marker a command whose stream was cut before its start event came", async () => {
      // envd started it, but the client never learnt its pid: the marker still finds its tree.
      const probe = `unseen-start-${Date.now()}`;
      emulator.dropNextStreams(1, 0);
      const error = await failureOf(machine.exec({ shell: `exec -a ${probe} sleep 60 & sleep 60; : ${probe}` }));
      expect(error.code).toBe("UNAVAILABLE");
      expect(await emulator.countProcesses(idOf(machine), probe)).toBe(0);
      expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
    }, 60_000);

    it("ends a timed-out command whose stream went silent: timed out once its tree is killed", async () => {
      const probe = `silent-${Date.now()}`;
      emulator.silenceNextStreams(1);
      const started = performance.now();
      const result = await machine.exec({
        shell: `exec -a ${probe} sleep 60 & sleep 60; : ${probe}`,
        timeoutMs: 2_000,
      });
      // Before, it waited for the silent stream until the SDK's own deadline.
      expect(performance.now() - started).toBeLessThan(2_000 + END_AFTER_KILL_MS + 5_000);
      expect(result).toMatchObject({ timedOut: true, exitCode: null });
      // pgrep run alone (it leaves itself out): countProcesses's shell pipeline can count its own fork under load.
      const left = await machine.exec({ argv: ["pgrep", "-c", "-f", "--", probe] });
      expect(new TextDecoder().decode(left.stdout).trim()).toBe("0");
    }, 40_000);

    it("ends a timed-out command whose stream went silent and whose kill failed with UNAVAILABLE", async () => {
      emulator.silenceNextStreams(1, { thenFailStarts: 1 });
      const started = performance.now();
      const error = await failureOf(machine.exec({ shell: "sleep 60", timeoutMs: 2_000 }));
      emulator.clearFaults();
      expect(performance.now() - started).toBeLessThan(2_000 + KILL_TREE_LIMIT_MS + 5_000);
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.retryable).toBe(false);
      expect(error.details).toMatchObject({ timedOut: true, killConfirmed: false });
      await machine.exec({ shell: "pkill -KILL -f 'sleep 60'; true" });
    }, 40_000);

    it("never replaces a computer on an auth error: reconnect throws, it does not say gone", async () => {
      const other = wrongKey();
      const error = await failureOf(other.reconnect(machine.ref));
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/refused the API key/);
      expect((await failureOf(other.provision({ computerId: "x", homeKey: "x" }))).code).toBe("UNAVAILABLE");
      expect((await failureOf(other.list({ labels: {} }))).code).toBe("UNAVAILABLE");
      // The sandbox is untouched.
      expect(emulator.sandbox(idOf(machine))?.state).toBe("running");
    }, 30_000);

    it("without a key is made, and says so at the first computer call", async () => {
      const keyless = e2bProvider({ template: TEST_TEMPLATE, apiUrl: emulator.apiUrl }, {});
      const error = await failureOf(keyless.provision({ computerId: "x", homeKey: "x" }));
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.message).toMatch(/no API key/);
      expect((await failureOf(keyless.reconnect(machine.ref))).code).toBe("UNAVAILABLE");
    });

    it("surfaces a missing template when a computer starts, as NOT_FOUND", async () => {
      const error = await failureOf(provider.provision({ computerId: "x", homeKey: "x", image: "no-such-template" }));
      expect(error.code).toBe("NOT_FOUND");
      expect(error.message).toContain("no-such-template");
    });

    it("starts from the stock template while the computer template does not exist, and says which it got", async () => {
      const said: { message: string; fields: unknown }[] = [];
      const logger = {
        debug: () => {},
        info: (message: string, fields: unknown) => void said.push({ message, fields }),
        warn: (message: string, fields: unknown) => void said.push({ message, fields }),
        error: () => {},
      };
      // The emulator's computer template stands in for E2B's stock `desktop`.
      const fallback = env.provider({ stockTemplate: TEST_TEMPLATE });
      const machine = await fallback.provision(
        { computerId: "stock", homeKey: `stock-${Date.now()}`, image: "not-built-yet" },
        opContext({ timeoutMs: 120_000, logger }),
      );
      try {
        expect(said).toContainEqual({
          message: "e2b template missing: using the stock template",
          fields: { requested: "not-built-yet", used: TEST_TEMPLATE },
        });
        expect((await machine.exec({ argv: ["true"] })).exitCode).toBe(0);
      } finally {
        await machine.destroy();
      }
      // Without a stock template it is NOT_FOUND, as on Novita.
      const strict = env.provider({ stockTemplate: null });
      const error = await failureOf(strict.provision({ computerId: "x", homeKey: "x", image: "not-built-yet" }));
      expect(error.code).toBe("NOT_FOUND");
    }, 90_000);

    it("gives PROVIDER_GONE for a vanished sandbox, and gone from reconnect", async () => {
      const doomed = await provision("vanish");
      await emulator.vanish(idOf(doomed));
      expect((await failureOf(doomed.exec({ argv: ["true"] }))).code).toBe("PROVIDER_GONE");
      expect(await provider.reconnect(doomed.ref)).toBe("gone");
      expect(await provider.reconnect("e2b:inever-existed" as ProviderRef)).toBe("gone");
    }, 60_000);

    it("puts no API key or access token in any log, event or error", async () => {
      const said: unknown[] = [];
      const logger: Logger = {
        debug: (msg, fields) => said.push(msg, fields),
        info: (msg, fields) => said.push(msg, fields),
        warn: (msg, fields) => said.push(msg, fields),
        error: (msg, fields) => said.push(msg, fields),
      } as Logger;
      const ctx = { logger };
      const m = await provider.provision({ computerId: "secrets", homeKey: `secrets-${Date.now()}` }, ctx);
      owned.push(m);
      await m.exec({ argv: ["true"] }, ctx);
      await m.stop(ctx);
      const resumed = (await provider.reconnect(m.ref, ctx)) as Machine;
      said.push(await failureOf(wrongKey().reconnect(m.ref, ctx)));
      said.push(await failureOf(provider.provision({ computerId: "x", homeKey: "x", image: "missing" }, ctx)));
      emulator.dropNextStreams(1, 1);
      said.push(await failureOf(resumed.exec({ shell: "echo a; sleep 5" }, ctx)));
      emulator.injectControlPlaneFault({ status: 503, path: /^\/v2\/sandboxes$/ });
      said.push(await failureOf(provider.provision({ computerId: "y", homeKey: "y" }, ctx)));
      emulator.clearFaults();
      const token = emulator.sandbox(idOf(m))?.envdAccessToken as string;
      expect(token.length).toBeGreaterThan(20);
      const dump = JSON.stringify(said, (_k, v) =>
        v instanceof Error ? { message: v.message, stack: v.stack, cause: (v.cause as Error)?.message } : v,
      );
      expect(dump.length).toBeGreaterThan(200);
      expect(dump).not.toContain(env.apiKey);
      expect(dump).not.toContain(token);
      expect(JSON.stringify(emulator.calls)).not.toContain(env.apiKey);
      expect(JSON.stringify(emulator.calls)).not.toContain(token);
    }, 60_000);
  });
}
