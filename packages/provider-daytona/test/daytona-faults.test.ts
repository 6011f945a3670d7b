import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import { type Machine, opContext } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { createComputerRuntime } from "@agent-computer/runtime";
import { failureOf, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daytonaProvider } from "../src/index.js";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// Faults through the real SDK against the emulator: transient toolbox and
// control-plane answers retried to success, a log websocket cut mid-command,
// and an API key the service refuses.
const env = await daytonaTestEnvironment("daytona: faults");
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  let machine: Machine;
  const idOf = (m: Machine) => m.ref.slice("daytona:".length);
  const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");
  const startsOf = (id: string) => env.emulator.requests.filter((r) => r === `POST /api/sandbox/${id}/start`).length;

  describe("daytona: faults", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "faults", homeKey: `faults-${Date.now()}` });
      owned.push(machine);
    }, 120_000);
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("retries the toolbox's 404 from an archived sandbox (Daytona #4632): starts it and runs the command", async () => {
      await machine.files.write("before-archive.txt", new TextEncoder().encode("kept"));
      await env.emulator.archiveBehindTheProvider(idOf(machine));
      expect(env.emulator.stateOf(idOf(machine))).toBe("archived");
      const starts = startsOf(idOf(machine));
      const result = await machine.exec({ argv: ["cat", "before-archive.txt"] }, opContext({ timeoutMs: 60_000 }));
      expect(text(result.stdout)).toBe("kept");
      expect(startsOf(idOf(machine))).toBe(starts + 1);
      expect(env.emulator.stateOf(idOf(machine))).toBe("started");
    }, 90_000);

    it("retries 502 and 400 answers during state changes (Daytona #4142) to success", async () => {
      const id = idOf(machine);
      env.emulator.inject({ method: "POST", path: /^\/toolbox\/[^/]+\/process\/session$/, status: 502, times: 2 });
      expect(text((await machine.exec({ argv: ["echo", "through"] })).stdout)).toBe("through\n");
      expect(env.emulator.pendingFaults).toBe(0);
      // The log stream's upgrade refused once: followed again, each byte once.
      env.emulator.inject({ method: "WS", path: /\/logs$/, status: 502 });
      const twice = await machine.exec({ shell: "printf 'one\\n'; printf 'two\\n' >&2" });
      expect([text(twice.stdout), text(twice.stderr)]).toEqual(["one\n", "two\n"]);
      expect(env.emulator.refusals.some((r) => /^502 WS .*\/logs$/.test(r))).toBe(true);
      await env.emulator.stopBehindTheProvider(id);
      env.emulator.inject({ method: "POST", path: new RegExp(`^/api/sandbox/${id}/start$`), status: 400, times: 1 });
      env.emulator.inject({ method: "GET", path: new RegExp(`^/api/sandbox/${id}$`), status: 502, times: 2 });
      const again = await provider.reconnect(machine.ref, opContext({ timeoutMs: 60_000 }));
      expect(again).not.toBe("gone");
      expect(env.emulator.pendingFaults).toBe(0);
      expect(text((await (again as Machine).exec({ argv: ["echo", "back"] })).stdout)).toBe("back\n");
    }, 90_000);

    it("a create whose answer is lost (502 after the sandbox was made) finds that sandbox: no second one, none leaked", async () => {
      env.emulator.inject({ method: "POST", path: /^\/api\/sandbox$/, status: 502, after: true });
      const made = await provider.provision({ computerId: "lost-answer", homeKey: `lost-answer-${Date.now()}` });
      owned.push(made);
      expect(env.emulator.pendingFaults).toBe(0);
      expect(env.emulator.refusals).toContain("502 POST /api/sandbox");
      expect(await provider.list({ labels: { "agent-computer.org/computer-id": "lost-answer" } })).toEqual([made.ref]);
      expect(text((await made.exec({ argv: ["echo", "found"] })).stdout)).toBe("found\n");
    }, 90_000);

    it("a log websocket dropped mid-command is UNAVAILABLE and leaves no process behind", async () => {
      const mark = `orphan-check-${Date.now()}`;
      env.emulator.dropNextLogStream();
      const error = await failureOf(
        machine.exec({ argv: ["sh", "-c", `echo started; sleep 60; echo ${mark}`], env: { MARK: mark } }),
      );
      expect(error).toMatchObject({ name: "AgentComputerError", code: "UNAVAILABLE" });
      expect(String((error as Error).message)).toMatch(/log stream dropped/);
      const left = await machine.exec({ shell: `grep -l "MARK=${mark}" /proc/[0-9]*/environ 2>/dev/null | wc -l` });
      expect(text(left.stdout).trim()).toBe("0");
    }, 60_000);

    it("a stop during a command stays stopped: following, killing and cleaning up after it start nothing", async () => {
      const id = idOf(machine);
      let began = () => {};
      const running = new Promise<void>((resolve) => {
        began = resolve;
      });
      const ran = failureOf(
        machine.exec({ shell: "echo started; sleep 60", onOutput: () => began() }, opContext({ timeoutMs: 60_000 })),
      );
      await running;
      const starts = startsOf(id);
      await machine.stop();
      expect(env.emulator.stateOf(id)).toBe("stopped");
      // The command went with the stop: its follow, kill and session cleanup fail, none starts the sandbox.
      expect(await ran).toMatchObject({ name: "AgentComputerError" });
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(env.emulator.stateOf(id)).toBe("stopped");
      expect(startsOf(id)).toBe(starts);
      // New work starts it again.
      expect(text((await machine.exec({ argv: ["echo", "woken"] })).stdout)).toBe("woken\n");
      expect(startsOf(id)).toBe(starts + 1);
    }, 90_000);

    it("an API key the service refuses is an error, never gone: the runtime replaces nothing", async () => {
      const dataDir = await temporaryDataDir();
      const stateStore = new MemoryStateStore();
      const events: string[] = [];
      const runtimeOn = (p: typeof provider) =>
        createComputerRuntime({
          provider: p,
          stateStore,
          homeStore: new LocalAgentHomeStore({ dataDir }),
          onEvent: (e) => events.push(e.type),
        });
      const workspaceId = `auth-${Date.now()}`;
      const first = runtimeOn(provider).startRun({ workspaceId, botId: "alpha" });
      const kept = await first.machine();
      owned.push(kept);
      await first.end("completed");
      const sandboxes = env.emulator.requests.filter((r) => r === "POST /api/sandbox").length;

      const refused = daytonaProvider({
        apiKey: "dtn_revoked_key",
        apiUrl: env.emulator.apiUrl,
        snapshot: env.image,
        stateUpdates: "polling",
      });
      const gone = await failureOf(refused.reconnect(kept.ref));
      expect(gone).toMatchObject({ code: "UNAVAILABLE", retryable: false });
      expect((await failureOf(refused.list({ labels: {} }))) as object).toMatchObject({ code: "UNAVAILABLE" });
      events.length = 0;
      const run = runtimeOn(refused).startRun({ workspaceId, botId: "alpha" });
      expect(await failureOf(run.machine())).toMatchObject({ code: "UNAVAILABLE" });
      await run.end("failed").catch(() => {});
      expect(events).not.toContain("replaced");
      expect(events).not.toContain("provisioning");
      // Nothing was created or deleted: the first sandbox is still there, the same.
      expect(env.emulator.requests.filter((r) => r === "POST /api/sandbox").length).toBe(sandboxes);
      expect(env.emulator.stateOf(idOf(kept))).toBe("started");
      expect(await provider.reconnect(kept.ref)).not.toBe("gone");
    }, 120_000);
  });
}
