import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compiledScript } from "../../../test/support/compiled-script.js";
import { hostProvider } from "../src/host-provider.js";
import { hostTestEnvironment, TEST_PATH, TEST_USER } from "./host-test-environment.js";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `pid` is gone (a SIGKILLed process is reaped by its parent a moment later); false after 5 s. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!alive(pid) || zombie(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

function zombie(pid: number): boolean {
  try {
    return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Starts `sleep 1000` in a session of its own inside the machine, and gives its pid. */
async function detachedSleeper(machine: Machine): Promise<number> {
  const r = await machine.exec({ shell: "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!" });
  return Number(text(r.stdout).trim());
}

const env = await hostTestEnvironment("host computers: processes and environment", "none");
if (!env.missing) {
  describe("host computers: processes and environment", () => {
    let provider: SandboxProvider;
    const owned: Machine[] = [];
    const outsiders: number[] = [];
    const provision = async (name: string) => {
      const m = await provider.provision({ computerId: name, homeKey: `${name}-${Date.now()}` });
      owned.push(m);
      return m;
    };

    beforeAll(async () => {
      provider = hostProvider(await env.options());
    });
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
      for (const pid of outsiders) if (alive(pid)) process.kill(pid, "SIGKILL");
    });

    it("stop ends what the computer started, also in sessions of its own, and nothing else", async () => {
      const machine = await provision("stopped");
      const neighbour = await provision("neighbour");
      const own = await detachedSleeper(machine);
      const neighbours = await detachedSleeper(neighbour);
      // A process of the app's own, with the same program, outside any computer.
      const outsider = spawn("sleep", ["1000"], { stdio: "ignore" });
      outsiders.push(outsider.pid as number);
      expect([own, neighbours, outsider.pid].every((pid) => alive(pid as number))).toBe(true);

      await machine.stop();
      expect(await gone(own)).toBe(true);
      expect(alive(neighbours)).toBe(true);
      expect(alive(outsider.pid as number)).toBe(true);
      await expect(machine.exec({ argv: ["true"] })).rejects.toMatchObject({ code: "CONFLICT" });

      await neighbour.destroy();
      expect(await gone(neighbours)).toBe(true);
      expect(alive(outsider.pid as number)).toBe(true);
    });

    // Root in a container (Docker drops CAP_SYS_PTRACE) may not read another
    // user's /proc/<pid>/environ, where a computer's marker is: the computer's
    // own user reads it instead (computer-processes.ts). Found by
    // scripts/measure-quick-tier.sh, whose container is such a machine.
    it("stop ends the computer's processes also when the app is root in a container (no CAP_SYS_PTRACE)", async (context) => {
      const engine = await promisify(execFile)("docker", ["version", "--format", "{{.Server.Version}}"]).catch(
        (error: Error) => error,
      );
      if (engine instanceof Error) {
        const why = `needs a Docker engine to run the app as root in a container (${engine.message.split("\n")[0]})`;
        if (process.env.CI) throw new Error(why);
        return context.skip(why);
      }
      const child = await compiledScript(fileURLToPath(new URL("./stopped-without-ptrace.ts", import.meta.url)));
      const repository = fileURLToPath(new URL("../../../", import.meta.url));
      const { stdout } = await promisify(execFile)("docker", [
        "run",
        "--rm",
        "--init",
        "--network",
        "none",
        "-v",
        `${process.execPath}:/usr/local/bin/node:ro`,
        "-v",
        `${repository}:${repository}:ro`,
        // The computer image's base (provider-docker's BASE_IMAGE), which CI's set-up pulls.
        "debian:bookworm-slim",
        "node",
        child,
        "1000",
        "1000",
        TEST_PATH,
      ]);
      expect(JSON.parse(stdout)).toMatchObject({ readsOthers: false, gone: true });
    });

    it("a timeout kills a child that left the command's session", async () => {
      const machine = await provision("timeout");
      const r = await machine.exec({
        shell: "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > escaped.pid; sleep 1000",
        timeoutMs: 500,
      });
      expect(r.timedOut).toBe(true);
      const escaped = Number(text(await machine.files.read("escaped.pid")).trim());
      expect(escaped).toBeGreaterThan(1);
      expect(await gone(escaped)).toBe(true);
    });

    it("runs as the computer's user in its home, with the computer's environment and never the app's", async () => {
      process.env.HOST_TEST_APP_SECRET = "app-only";
      try {
        const machine = await provision("environment");
        const r = await machine.exec({
          shell:
            'printf "%s|%s|%s|%s" "$(id -u)" "$HOME" "$(pwd)" "$(printenv HOST_TEST_APP_SECRET || echo unset)"; printf "|%s" "$BOT_VAR"',
          env: { BOT_VAR: "bot" },
        });
        const uid = String(TEST_USER?.uid ?? process.getuid?.());
        expect(text(r.stdout)).toBe(`${uid}|${machine.workspacePath}|${machine.workspacePath}|unset|bot`);
      } finally {
        delete process.env.HOST_TEST_APP_SECRET;
      }
    });

    it("a stopped computer comes back on reconnect with its home; a destroyed one is gone with its home", async () => {
      const machine = await provision("again");
      await machine.files.write("kept.txt", new TextEncoder().encode("kept"));
      await machine.stop();
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      expect(text(await (again as Machine).files.read("kept.txt"))).toBe("kept");
      await (again as Machine).destroy();
      expect(await provider.reconnect(machine.ref)).toBe("gone");
      expect(existsSync(machine.workspacePath)).toBe(false);
    });
  });
}
