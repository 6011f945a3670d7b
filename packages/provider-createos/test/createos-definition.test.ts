import { ServiceRecorder } from "@agent-computer/testing/emulator";
import { CreateosSandboxClient, CreateosSandboxNotFoundError, type Sandbox } from "@nodeops-createos/sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { CREATEOS_OPERATIONS } from "../src/testing/index.js";
import { createosTestEnvironment, TEST_API_KEY, TEST_ROOTFS } from "./createos-test-environment.js";

// The emulator as the official SDK sees it: the SDK's own calls against
// it, the managed-process routes through the SDK's transport as the Go
// SDK sends them, every exchange held to the definition, and zero
// violations at the end.

describe("createos definition: the recorder refuses what the SDKs would not send", () => {
  it("records a body field the definition does not have, and a route it does not list", () => {
    const recorder = new ServiceRecorder("CreateOS", CREATEOS_OPERATIONS);
    recorder
      .request("POST", "/v1/sandboxes", { body: { shape: "s-4vcpu-4gb", labels: { a: "b" } }, headers: {} })
      .answer(200, { status: "success", data: {} });
    recorder.request("POST", "/v1/boxes", {}).answer(404);
    const where = recorder.violations.map((v) => `${v.operation ?? "-"} ${v.where}`);
    expect(where).toEqual(["createSandbox request", "createSandbox request", "createSandbox response", "- route"]);
  });
});

const env = await createosTestEnvironment("createos definition");
if (!env.missing) {
  const { emulator } = env;
  const client = new CreateosSandboxClient({ apiKey: TEST_API_KEY, baseUrl: emulator.baseUrl, retry: false });
  const made: Sandbox[] = [];

  describe("createos definition: the emulator through the official SDK", () => {
    afterAll(async () => {
      for (const sandbox of made) await sandbox.destroy().catch(() => {});
    }, 60_000);

    it("creates synchronously, pauses and resumes the same VM, destroys to a kept `destroyed` row", async () => {
      const sandbox = await client.createSandbox({ shape: "s-4vcpu-4gb", rootfs: TEST_ROOTFS, name: "def-life" });
      made.push(sandbox);
      expect((await client.getSandbox(sandbox.id)).status).toBe("running");
      await expect(
        client.createSandbox({ shape: "s-4vcpu-4gb", rootfs: TEST_ROOTFS, name: "def-life" }),
      ).rejects.toThrow();
      await sandbox.pause();
      await sandbox.waitUntilPaused({ timeoutMs: 30_000 });
      await sandbox.resume();
      await sandbox.waitUntilRunning({ timeoutMs: 30_000 });
      expect((await client.listSandboxes()).map((s) => s.id)).toContain(sandbox.id);
      await sandbox.destroy();
      await sandbox.waitUntilDestroyed({ timeoutMs: 30_000 });
      expect((await client.listSandboxes({ status: "destroyed" })).map((s) => s.id)).toContain(sandbox.id);
      await expect(client.getSandbox("sb_nothing")).rejects.toBeInstanceOf(CreateosSandboxNotFoundError);
    }, 120_000);

    it("runs exec without a shell and drops stdin and env; files move as raw bytes", async () => {
      const sandbox = await client.createSandbox({ shape: "s-4vcpu-4gb", rootfs: TEST_ROOTFS, ingress_enabled: true });
      made.push(sandbox);
      const echoed = await sandbox.runCommand("echo", ["$HOME", "a b"]);
      expect(echoed.result.stdout).toBe("$HOME a b\n");
      // The Go SDK sends `stdin` and `env`; the service drops them (types.ts ExecRequest).
      const dropped = (await client.http.request("POST", `/v1/sandboxes/${sandbox.id}/exec`, {
        body: { cmd: "sh", args: ["-c", 'cat; echo "[$GIVEN]"'], stdin: "hello", env: { GIVEN: "yes" } },
      })) as { result: { stdout: string } };
      expect(dropped.result.stdout).toBe("[]\n");
      expect(emulator.droppedExecFields).toEqual(expect.arrayContaining(["stdin", "env"]));
      const bytes = Buffer.from([0, 1, 2, 255, 10, 13]);
      await sandbox.files.upload("/tmp/raw.bin", bytes);
      expect(Buffer.from(await sandbox.files.download("/tmp/raw.bin"))).toEqual(bytes);
      await expect(sandbox.files.download("/tmp/missing")).rejects.toBeInstanceOf(CreateosSandboxNotFoundError);
    }, 120_000);

    it("keeps a managed process's output for replay, takes its stdin, and answers its exit", async () => {
      const sandbox = made[1] as Sandbox;
      const path = `/v1/sandboxes/${sandbox.id}/processes`;
      const started = (await client.http.request("POST", path, {
        body: { cmd: "sh", args: ["-c", "read line; echo got:$line; echo oops >&2; exit 3"], cwd: "/tmp" },
      })) as { process_id: string; state: string };
      expect(started.state).toBe("running");
      await client.http.request("POST", `${path}/${started.process_id}/input`, {
        body: { data_base64: Buffer.from("hi\n").toString("base64") },
      });
      await client.http.request("POST", `${path}/${started.process_id}/stdin/close`);
      const waited = (await client.http.request("GET", `${path}/${started.process_id}/wait`, {
        query: { scope: "tree", timeout_ms: 20_000 },
      })) as { state: string; exit_code: number };
      expect(waited).toMatchObject({ state: "exited", exit_code: 3 });
      const read = async (after: number) => {
        const frames: { type: string; seq?: number; data_base64?: string; exit_code?: number }[] = [];
        for await (const frame of client.http.stream<(typeof frames)[number]>(
          "GET",
          `${path}/${started.process_id}/connect`,
          {
            query: { after },
          },
        )) {
          frames.push(frame);
        }
        return frames;
      };
      const all = await read(0);
      const out = all
        .filter((f) => f.type === "data")
        .map((f) => Buffer.from(f.data_base64 ?? "", "base64").toString());
      expect(out.join("")).toContain("got:hi");
      expect(all.at(-1)).toMatchObject({ type: "exit", exit_code: 3 });
      // Replayed from a sequence: only what came after it, then the exit again.
      const later = await read(1);
      expect(later.length).toBe(all.length - 1);
    }, 60_000);

    it("serves a port through the ingress URL without authentication", async () => {
      const sandbox = made[1] as Sandbox;
      await sandbox.runCommand("sh", [
        "-c",
        "nohup setsid python3 -m http.server 8123 --bind 0.0.0.0 --directory /tmp >/dev/null 2>&1 &",
      ]);
      await sandbox.waitForPortReady(8123, { timeoutMs: 20_000 });
      const url = sandbox.previewUrl(8123, { scheme: "http" });
      const answer = await fetch(`${url}raw.bin`);
      expect(answer.status).toBe(200);
    }, 60_000);

    it("left the definition nowhere", () => {
      emulator.recorder.assertNoViolations();
    });
  });
}
