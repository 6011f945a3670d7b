import { createHash, randomBytes } from "node:crypto";
import { AgentComputerError, type Machine } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";
import { boxTestEnvironment } from "./box-test-environment.js";

// exec over a command API without stdin and with cut answers: here the
// emulator cuts every synchronous answer at 100 KB, below the poller's
// first range, so the ranges must shrink and still arrive byte for byte.
const env = await boxTestEnvironment("box: exec over detached commands", { syncOutputCap: 100_000 });
if (!env.missing) {
  const provider = env.provider();
  const owned: Machine[] = [];
  let machine: Machine;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  describe("box: exec over detached commands", () => {
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    }, 60_000);

    it("streams 3 MiB to a listener exactly through cut answers, keeping only the cap", async () => {
      machine = await provider.provision({ computerId: "exec", homeKey: `exec-${Date.now()}` });
      owned.push(machine);
      const bytes = randomBytes(3 * 1024 * 1024);
      await machine.files.write("big.bin", bytes);
      const heard: Buffer[] = [];
      const r = await machine.exec({
        argv: ["cat", "big.bin"],
        maxOutputBytes: 1000,
        onOutput: (stream, chunk) => {
          if (stream === "stdout") heard.push(Buffer.from(chunk));
        },
      });
      expect(r.exitCode).toBe(0);
      expect(r.truncated).toBe(true);
      expect(Buffer.from(r.stdout)).toEqual(bytes.subarray(0, 1000));
      expect(Buffer.concat(heard).equals(bytes)).toBe(true);
      // Without a listener the whole output is still read exactly when it fits the cap.
      const whole = await machine.exec({ argv: ["cat", "big.bin"], maxOutputBytes: 4 * 1024 * 1024 });
      expect(createHash("sha256").update(whole.stdout).digest("hex")).toBe(
        createHash("sha256").update(bytes).digest("hex"),
      );
    }, 120_000);

    it("stages a stdin larger than one files-API part and runs each command detached", async () => {
      const input = randomBytes(9 * 1024 * 1024 + 17);
      const before = env.emulator.detachedIn(machine.ref.slice(4));
      const r = await machine.exec({ argv: ["sha256sum"], stdin: input });
      expect(new TextDecoder().decode(r.stdout).split(" ")[0]).toBe(createHash("sha256").update(input).digest("hex"));
      expect(env.emulator.detachedIn(machine.ref.slice(4))).toBe(before + 1);
      // A missing program is exit 127, a result and not an error.
      expect((await machine.exec({ argv: ["no-such-program"] })).exitCode).toBe(127);
    }, 120_000);

    it("a start whose answer was lost is retried without running the command twice", async () => {
      env.emulator.inject({ method: "POST", path: /\/commands$/, status: 502, after: true });
      const r = await machine.exec({ shell: "echo once >> started.log" });
      expect(r.exitCode).toBe(0);
      expect(env.emulator.pendingFaults).toBe(0);
      expect(new TextDecoder().decode(await machine.files.read("started.log"))).toBe("once\n");
    }, 60_000);

    it("a poll whose answer was lost is asked again and gives the same end", async () => {
      // The start goes through; the next three polls run in the box and their answers are lost,
      // so the poll that sees the exit is asked again (seen side by side in CI: a 500 after the work).
      env.emulator.inject({ method: "POST", path: /\/commands$/, status: 502, after: true, skip: 1, times: 3 });
      const r = await machine.exec({ shell: "printf done" });
      expect(env.emulator.pendingFaults).toBe(0);
      expect(r.exitCode).toBe(0);
      expect(new TextDecoder().decode(r.stdout)).toBe("done");
    }, 60_000);

    it("a timeout kills a child that left for its own session; its process group goes too", async () => {
      const r = await machine.exec({
        shell: "setsid sh -c 'while :; do date +%s%N >> escaped.log; sleep 0.1; done' & sleep 30",
        timeoutMs: 1_000,
      });
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBeNull();
      await sleep(400);
      const size = (await machine.files.read("escaped.log")).length;
      expect(size).toBeGreaterThan(0);
      await sleep(700);
      expect((await machine.files.read("escaped.log")).length).toBe(size);
    }, 60_000);

    it("a stop during a command archives the box, ends the command UNAVAILABLE and resumes nothing", async () => {
      const id = machine.ref.slice("box:".length);
      const resumes = () => env.emulator.requests.filter((r) => r.endsWith("/resume")).length;
      let began = () => {};
      const running = new Promise<void>((resolve) => {
        began = resolve;
      });
      const ran = failureOf(machine.exec({ shell: "echo started; sleep 60", onOutput: () => began() }));
      await running;
      const before = resumes();
      await machine.stop();
      expect(env.emulator.stateOf(id)).toBe("archived");
      // The command went with the stop; following it must not bring the sandbox back.
      expect(await ran).toMatchObject({ name: "AgentComputerError", code: "UNAVAILABLE" });
      await sleep(3_000);
      expect(env.emulator.stateOf(id)).toBe("archived");
      expect(resumes()).toBe(before);
      // New work resumes it.
      expect(new TextDecoder().decode((await machine.exec({ argv: ["echo", "woken"] })).stdout)).toBe("woken\n");
      expect(resumes()).toBe(before + 1);
    }, 90_000);

    it("a poll the service refuses as not running (409 sandbox_not_ready) ends the command: it does not resume the box", async () => {
      const resumes = () => env.emulator.requests.filter((r) => r.endsWith("/resume")).length;
      const before = resumes();
      // The detached start passes; the first poll meets the answer a stopped box gives.
      env.emulator.inject({ method: "POST", path: /\/commands$/, skip: 1, status: 409, code: "sandbox_not_ready" });
      const failure = await failureOf(machine.exec({ shell: "sleep 2; echo late" }));
      expect(failure).toMatchObject({ name: "AgentComputerError", code: "UNAVAILABLE" });
      expect(String((failure as Error).message)).toMatch(/stopped while the command ran/);
      expect(env.emulator.pendingFaults).toBe(0);
      expect(resumes()).toBe(before);
    }, 60_000);

    it("a supervisor that dies without an exit code is UNAVAILABLE, with nothing left running", async () => {
      const running = failureOf(machine.exec({ shell: "echo started; exec sleep 60" }));
      await sleep(1_500);
      // Someone in the box kills that command's supervisor (its python3 wrapper), not the command;
      // matched by its command line, built in two parts so this killer's own supervisor does not match.
      await machine.exec({
        shell: [
          'pat="started; exec"; pat="$pat sleep 60"',
          'for p in /tmp/.agent-computer-exec/*/pid; do pid=$(cat "$p")',
          "  tr '\\000' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -qF -- \"$pat\" && kill -9 \"$pid\"",
          "done; true",
        ].join("\n"),
      });
      const failure = await running;
      expect(AgentComputerError.is(failure, "UNAVAILABLE")).toBe(true);
      const left = await machine.exec({
        shell:
          "for c in /proc/[0-9]*/cmdline; do tr '\\000' ' ' < $c 2>/dev/null; echo; done | grep -cx 'sleep 60 ' || true",
      });
      expect(new TextDecoder().decode(left.stdout).trim()).toBe("0");
    }, 60_000);
  });
}
