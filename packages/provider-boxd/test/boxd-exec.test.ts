import { AgentComputerError, COMPUTER_LABELS, type Machine } from "@agent-computer/core";
import { END_AFTER_KILL_MS, KILL_TREE_LIMIT_MS } from "@agent-computer/core/provider-utils";
import { SCREEN_GATEWAY_PORT } from "@agent-computer/desktop-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BoxdClient, BoxdTokenSource } from "../src/index.js";
import { boxdTestEnvironment, TEST_API_KEY, TEST_ORG } from "./boxd-test-environment.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

// The Exec stream, the key exchange, stop as suspend and the service's own
// refusals, through the package's client against the emulator held to
// proto/boxd-api.proto (zero violations asserted when the file ends).
const env = await boxdTestEnvironment("boxd: exec, suspend and the definition");
if (!env.missing) {
  describe("boxd: exec, suspend and the definition", () => {
    const provider = env.provider();
    const secrets = new Set([TEST_API_KEY]);
    const tokens = new BoxdTokenSource({
      apiKey: TEST_API_KEY,
      tokenUrl: env.emulator.tokenUrl,
      requestTimeoutMs: 10_000,
      secrets,
    });
    const client = new BoxdClient({
      apiUrl: env.emulator.apiUrl,
      tokens,
      requestTimeoutMs: 30_000,
      retryMs: 5_000,
      secrets,
    });
    let machine: Machine;
    let name: string;

    beforeAll(async () => {
      machine = await provider.provision({ computerId: "exec-test", homeKey: "exec-test" });
      name = machine.ref.slice("boxd:".length);
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
      client.close();
    }, 60_000);

    it("a process the bot started is still running, with its memory, after stop and reconnect", async () => {
      // The value lives only in the process (its argument); it rewrites the heartbeat while it runs.
      // It starts its own session: what an exec starts in the exec's session ends with the exec.
      const started = await machine.exec({
        shell: `v=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n'); echo "$v"
setsid sh -c 'while :; do echo "$0 $(date +%s%N)" > /tmp/hb.tmp && mv /tmp/hb.tmp /tmp/hb; sleep 0.2; done' "$v" >/dev/null 2>&1 </dev/null &
echo $!`,
      });
      expect(started.exitCode).toBe(0);
      const [value, pid] = text(started.stdout).trim().split("\n");
      await new Promise((resolve) => setTimeout(resolve, 600));
      await machine.stop();
      expect((await client.get(name, AbortSignal.timeout(10_000))).status).toBe("suspended");
      const stoppedAt = BigInt(Date.now()) * 1_000_000n;
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const back = again as Machine;
      await new Promise((resolve) => setTimeout(resolve, 800));
      const seen = await back.exec({ shell: `kill -0 ${pid} && cat /tmp/hb` });
      expect(seen.exitCode).toBe(0);
      const [heard, at] = text(seen.stdout).trim().split(" ");
      expect(heard).toBe(value);
      expect(BigInt(at as string)).toBeGreaterThan(stoppedAt);
    }, 90_000);

    it("a command after stop resumes the machine; cleanup after stop leaves it suspended", async () => {
      await machine.stop();
      // The kit removes a transfer file later; one that lands after a stop must not resume the machine.
      (machine as unknown as { removeLater(file: string): void }).removeLater("/tmp/none");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await client.get(name, AbortSignal.timeout(10_000))).status).toBe("suspended");
      const done = await machine.exec({ shell: "echo awake" });
      expect(text(done.stdout)).toBe("awake\n");
      expect((await client.get(name, AbortSignal.timeout(10_000))).status).toBe("running");
    }, 60_000);

    it("passes stdin byte for byte, keeps stderr apart and gives the exit code", async () => {
      const input = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
      const done = await machine.exec({ shell: "cat; echo oops >&2; exit 7", stdin: input });
      expect(done.exitCode).toBe(7);
      expect(Buffer.from(done.stdout).equals(input)).toBe(true);
      expect(text(done.stderr)).toBe("oops\n");
    }, 60_000);

    it("what a command leaves in its session ends with it; a process in a session of its own lives on", async () => {
      // The model the desktop relies on: its gateway, X and browser start sessions of their own (README).
      const done = await machine.exec({
        shell: "sleep 303 >/dev/null 2>&1 </dev/null & setsid sleep 304 >/dev/null 2>&1 </dev/null & echo started",
      });
      expect(text(done.stdout)).toBe("started\n");
      const left = await machine.exec({ shell: "ps -eo args | grep '^sleep 30[34]'; pkill -x -f 'sleep 304'" });
      expect(text(left.stdout)).toBe("sleep 304\n");
    }, 60_000);

    it("a deadline ends the command and kills what it started", async () => {
      const done = await machine.exec({ shell: "sleep 300 & sleep 301", timeoutMs: 1_500 });
      expect(done.timedOut).toBe(true);
      const left = await machine.exec({ shell: "ps -eo args | grep -c '^sleep 30[01]' || true" });
      expect(text(left.stdout).trim()).toBe("0");
    }, 60_000);

    it("an aborted command is cancelled and its processes killed", async () => {
      const controller = new AbortController();
      const running = machine.exec({ shell: "sleep 302" }, { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      controller.abort();
      await expect(running).rejects.toMatchObject({ name: "AgentComputerError" });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const left = await machine.exec({ shell: "ps -eo args | grep -c '^sleep 302' || true" });
      expect(text(left.stdout).trim()).toBe("0");
    }, 60_000);

    it("UploadFileStream writes a file byte for byte", async () => {
      const bytes = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 13) % 256));
      const written = await client.uploadFile(name, "/tmp/uploaded.bin", bytes, AbortSignal.timeout(30_000));
      expect(written).toBe(bytes.length);
      const read = await machine.exec({ argv: ["cat", "/tmp/uploaded.bin"], maxOutputBytes: 1024 * 1024 });
      expect(Buffer.from(read.stdout).equals(bytes)).toBe(true);
    }, 60_000);

    it("names are unique in an organisation: a second CreateVm of a name is refused", async () => {
      await expect(
        client.call("CreateVm", { name, image_ref: "", isolated: true }, "create again", AbortSignal.timeout(10_000)),
      ).rejects.toMatchObject({ code: "CONFLICT" });
    });

    it("a call without a token, or with an unknown one, is UNAUTHENTICATED; the key never shows", async () => {
      const refused = new BoxdClient({
        apiUrl: env.emulator.apiUrl,
        tokens: new BoxdTokenSource({
          apiKey: "bxd_wrong",
          tokenUrl: env.emulator.tokenUrl,
          requestTimeoutMs: 5_000,
          secrets,
        }),
        requestTimeoutMs: 5_000,
        retryMs: 0,
        secrets,
      });
      const error = await refused.get(name, AbortSignal.timeout(5_000)).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "UNAVAILABLE", details: { status: 401 } });
      expect(String((error as Error).message)).not.toContain(TEST_API_KEY);
      refused.close();
    });

    it("the machine's idle timers were set explicitly at provision", () => {
      const vm = env.emulator.vms.find("org-test", name);
      expect(vm?.autoSuspendSecs).toBe(0);
      expect(vm?.autoHibernateSecs).toBe(0);
    });

    it("the public URL is the screen gateway's port; port 8000 itself and other ports are UNSUPPORTED", async () => {
      const portUrl = (port: number, opts: { private: boolean }) =>
        (machine.portUrl as NonNullable<Machine["portUrl"]>).call(machine, port, opts);
      // The desktop runtime asks for the gateway privately: the gateway's tokens keep it so.
      expect(await portUrl(SCREEN_GATEWAY_PORT, { private: true })).toBe(env.emulator.publicUrlOf(name));
      await expect(portUrl(8000, { private: false })).rejects.toMatchObject({ code: "UNSUPPORTED" });
      await expect(portUrl(3000, { private: false })).rejects.toMatchObject({ code: "UNSUPPORTED" });
      // Every command is told where the gateway listens.
      const told = await machine.exec({ shell: 'echo "$AGENT_COMPUTER_GATEWAY_PORT"' });
      expect(text(told.stdout)).toBe("8000\n");
    }, 60_000);

    it("transient failures are retried, and a create whose answer was lost goes on with its machine", async () => {
      env.emulator.fail("CreateVm", { after: true });
      env.emulator.fail("GetVm", { times: 2 });
      const made = await provider.provision({ computerId: "faults", homeKey: "faults" });
      try {
        expect(text((await made.exec({ shell: "echo ok" })).stdout)).toBe("ok\n");
        const ours = await provider.list({ labels: { [COMPUTER_LABELS.computerId]: "faults" } });
        expect(ours).toEqual([made.ref]);
      } finally {
        await made.destroy();
      }
    }, 90_000);

    it("an exec on a machine whose container is gone while the service lists it running ends with a typed error", async () => {
      const lost = await provider.provision({ computerId: "lost", homeKey: "lost" });
      const unhandled: unknown[] = [];
      const keep = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", keep);
      try {
        await env.emulator.loseContainer(TEST_ORG, lost.ref.slice("boxd:".length));
        // Before the emulator answered such a call, it stayed open and the engine's refusal went unhandled.
        await expect(lost.exec({ shell: "echo hi", timeoutMs: 20_000 })).rejects.toBeInstanceOf(AgentComputerError);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(unhandled).toEqual([]);
      } finally {
        process.off("unhandledRejection", keep);
        await lost.destroy().catch(() => {});
      }
    }, 60_000);

    it("a command whose Exec is never answered ends past its timeout: timed out once its kill is confirmed", async () => {
      env.emulator.silenceExecs(1);
      const started = performance.now();
      const done = await machine.exec({ shell: "echo hi", timeoutMs: 2_000 });
      // Before, it waited for the silent call until the caller's deadline.
      expect(performance.now() - started).toBeLessThan(2_000 + END_AFTER_KILL_MS + 5_000);
      expect(done).toMatchObject({ timedOut: true, exitCode: null });
    }, 40_000);

    it("a command whose Exec and kill are never answered ends past its timeout with UNAVAILABLE", async () => {
      env.emulator.silenceExecs();
      try {
        const started = performance.now();
        const failure = await machine.exec({ shell: "echo hi", timeoutMs: 2_000 }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(performance.now() - started).toBeLessThan(2_000 + KILL_TREE_LIMIT_MS + 5_000);
        expect(AgentComputerError.is(failure, "UNAVAILABLE")).toBe(true);
        expect((failure as AgentComputerError).details).toMatchObject({ timedOut: true, killConfirmed: false });
      } finally {
        env.emulator.answerExecs();
      }
      expect(text((await machine.exec({ shell: "echo back" })).stdout)).toBe("back\n");
    }, 60_000);

    it("every request so far kept to the definition", () => {
      expect(env.emulator.recorder.calls.length).toBeGreaterThan(0);
      env.emulator.recorder.assertNoViolations();
    });
  });
}
