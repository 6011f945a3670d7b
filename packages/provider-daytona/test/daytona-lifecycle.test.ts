import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMPUTER_LABELS, type Machine } from "@agent-computer/core";
import { failureOf } from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daytonaProvider } from "../src/index.js";
import { daytonaTestEnvironment, TEST_API_KEY } from "./daytona-test-environment.js";

// What provider-daytona asks of Daytona and how exec behaves, through the
// real SDK on its default events channel against the emulator.
const env = await daytonaTestEnvironment("daytona: lifecycle and exec");
if (!env.missing) {
  const provider = env.provider({ activityRefreshMs: 1 });
  let machine: Machine;
  const idOf = (m: Machine) => m.ref.slice("daytona:".length);
  const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

  describe("daytona: lifecycle and exec", () => {
    beforeAll(async () => {
      machine = await provider.provision({
        computerId: "lifecycle",
        homeKey: `lifecycle-${Date.now()}`,
        labels: { "team.example/owner": "qa" },
      });
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("creates with auto-stop off, no public previews, the project's labels, and the SDK's events channel", async () => {
      const info = env.emulator.sandboxInfo(idOf(machine));
      expect(info).toMatchObject({ autoStopInterval: 0, public: false });
      expect(info?.labels).toMatchObject({
        "team.example/owner": "qa",
        [COMPUTER_LABELS.managed]: "true",
        [COMPUTER_LABELS.computerId]: "lifecycle",
      });
      // No HOME for the sandbox (the toolbox daemon would keep its files in the home); each command gets it.
      expect(info?.env.HOME).toBeUndefined();
      expect(new TextDecoder().decode((await machine.exec({ shell: 'printf %s "$HOME"' })).stdout)).toBe(
        machine.workspacePath,
      );
      // The SDK's default: state changes over socket.io, with the key as its auth token.
      expect(env.emulator.eventSubscribers).toBeGreaterThan(0);
      expect(await provider.list({ labels: { "team.example/owner": "qa" } })).toEqual([machine.ref]);
      expect(await provider.list({ labels: { "team.example/owner": "someone-else" } })).toEqual([]);
    });

    it("refreshes the sandbox's activity while the machine is used", async () => {
      const refreshes = () =>
        env.emulator.requests.filter((r) => r === `POST /api/sandbox/${idOf(machine)}/last-activity`).length;
      const before = refreshes();
      await machine.exec({ argv: ["true"] });
      await new Promise((resolve) => setTimeout(resolve, 5));
      await machine.exec({ argv: ["true"] });
      await expect.poll(refreshes, { timeout: 5_000 }).toBeGreaterThanOrEqual(before + 2);
    });

    it("refuses a ref of another provider kind without asking the API", async () => {
      const asked = env.emulator.requests.length;
      expect(await failureOf(provider.reconnect("docker:0123456789abcdef"))).toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      expect(env.emulator.requests.length).toBe(asked);
    });

    it("keeps every byte of stdout and stderr apart and exact, streams output as it comes, and takes stdin", async () => {
      const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const script = `import os, sys, time
b = bytes(range(256))
for i in range(4):
    os.write(1, b); os.write(2, b[::-1]); time.sleep(0.05)
os.write(1, b"\\r\\n\\x01\\x01\\x01\\x02\\x02\\x02")`;
      const result = await machine.exec({ argv: ["python3", "-c", script] });
      expect(result.exitCode).toBe(0);
      const reversed = Buffer.from(all).reverse();
      expect(Buffer.from(result.stdout)).toEqual(
        Buffer.concat([all, all, all, all, Buffer.from([13, 10, 1, 1, 1, 2, 2, 2])]),
      );
      expect(Buffer.from(result.stderr)).toEqual(Buffer.concat([reversed, reversed, reversed, reversed]));

      const seen: { stream: string; at: number }[] = [];
      const began = Date.now();
      const streamed = await machine.exec({
        shell: "printf first; sleep 2; printf second >&2",
        onOutput: (stream) => seen.push({ stream, at: Date.now() - began }),
      });
      expect(text(streamed.stdout)).toBe("first");
      expect(seen[0]).toMatchObject({ stream: "stdout" });
      expect((seen[0] as { at: number }).at).toBeLessThan(1_500);
      expect(seen.at(-1)).toMatchObject({ stream: "stderr" });

      const input = randomBytes(1024 * 1024 + 7);
      const hashed = await machine.exec({ argv: ["sha256sum"], stdin: input });
      expect(text(hashed.stdout).split(" ")[0]).toBe(createHash("sha256").update(input).digest("hex"));
      expect((await machine.exec({ shell: "exit 42" })).exitCode).toBe(42);
    }, 60_000);

    it("passes apiUrl to the SDK itself: DAYTONA_API_URL in the environment and a .env beside it change nothing", async () => {
      const dir = await mkdtemp(join(tmpdir(), "daytona-dotenv-"));
      const cwd = process.cwd();
      const saved = process.env.DAYTONA_API_URL;
      try {
        await writeFile(join(dir, ".env"), "DAYTONA_API_URL=http://127.0.0.1:9/api\n");
        process.chdir(dir);
        process.env.DAYTONA_API_URL = "http://127.0.0.1:9/api";
        const explicit = daytonaProvider({
          apiKey: TEST_API_KEY,
          apiUrl: env.emulator.apiUrl,
          snapshot: env.image,
          stateUpdates: "polling",
        });
        expect(await explicit.list({ labels: { "team.example/owner": "qa" } })).toEqual([machine.ref]);
      } finally {
        process.chdir(cwd);
        if (saved === undefined) delete process.env.DAYTONA_API_URL;
        else process.env.DAYTONA_API_URL = saved;
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}
