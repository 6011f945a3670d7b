import { AgentComputerError } from "@agent-computer/core";
import { text } from "@agent-computer/provider-kit";
import { failureOf } from "@agent-computer/testing/provider-test";
import { describe, expect, it } from "vitest";
import { createosTestEnvironment } from "./createos-test-environment.js";

// Stop pauses the VM with its memory (the SDK's docs/explanation/lifecycle.md:
// pause snapshots memory and disk, resume restores the same id): a
// process started before stop runs on after reconnect, holding what it
// held in memory.
const env = await createosTestEnvironment("createos pause keeps memory");

if (!env.missing) {
  describe("createos: stop pauses with memory kept", () => {
    it("a process started before stop is still running with its memory after reconnect; a command under way ends", async () => {
      const provider = env.provider();
      const machine = await provider.provision({ computerId: "pause-memory", homeKey: "home-pause", screenLimit: 0 });
      try {
        // The value lives only in the shell's memory; the file is its way of showing it.
        const start = await machine.exec({
          shell:
            "v=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n'); nohup setsid sh -c 'while :; do echo \"$0\" > /tmp/held; sleep 0.2; done' \"$v\" >/dev/null 2>&1 & echo $! > /tmp/held.pid; sleep 0.5; cat /tmp/held",
        });
        expect(start.exitCode).toBe(0);
        const held = text(start.stdout).trim();
        expect(held).toMatch(/^[0-9a-f]{16}$/);
        const pid = text((await machine.exec({ shell: "cat /tmp/held.pid" })).stdout).trim();

        // A command still running when stop pauses the VM ends with UNAVAILABLE; its process is frozen, not killed.
        const ending = failureOf(machine.exec({ shell: "sleep 30; echo done" }));
        await new Promise((resolve) => setTimeout(resolve, 500));
        await machine.stop();
        const ended = await ending;
        expect(AgentComputerError.is(ended, "UNAVAILABLE")).toBe(true);
        expect(env.emulator.statusOf(machine.ref.slice("createos:".length))).toBe("paused");

        const again = await provider.reconnect(machine.ref);
        expect(again).not.toBe("gone");
        if (again === "gone") return;
        // The same process, and what it writes now comes from its memory (the file removed first).
        const after = await again.exec({ shell: `kill -0 ${pid} && rm -f /tmp/held && sleep 1 && cat /tmp/held` });
        expect(after.exitCode).toBe(0);
        expect(text(after.stdout).trim()).toBe(held);
      } finally {
        await machine.destroy();
      }
    }, 180_000);
  });
}
