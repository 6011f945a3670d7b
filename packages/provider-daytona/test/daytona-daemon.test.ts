import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import type { Machine } from "@agent-computer/core";
import { Daytona, type Sandbox } from "@daytonaio/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daytonaTestEnvironment, TEST_API_KEY } from "./daytona-test-environment.js";

// The toolbox daemon as daytonaio/daytona v0.190.0 runs it (apps/daemon/pkg/
// session), through the real SDK and through the provider: a long-lived
// shell per session, each command's files under $HOME/.daytona/sessions,
// its log labelled line by line, 410 for input to a command that ended, and
// the runner's /dev/shm. None of this held against the emulator before.
const env = await daytonaTestEnvironment("daytona: the toolbox daemon's sessions");
if (!env.missing) {
  const provider = env.provider();
  let machine: Machine;
  let sandbox: Sandbox;
  const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");
  const sessions = "/home/computer/.daytona/sessions";

  /** A session of the SDK's own and one async command in it, run to its exit code. */
  const runInSession = async (command: string) => {
    const sessionId = `probe-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    await sandbox.process.createSession(sessionId);
    const { cmdId } = await sandbox.process.executeSessionCommand(sessionId, { command, runAsync: true });
    await expect
      .poll(async () => (await sandbox.process.getSessionCommand(sessionId, cmdId as string)).exitCode, {
        timeout: 15_000,
      })
      .toBeDefined();
    return { sessionId, cmdId: cmdId as string };
  };

  describe("daytona: the toolbox daemon's sessions", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "daemon", homeKey: `daemon-${Date.now()}` });
      const daytona = new Daytona({ apiKey: TEST_API_KEY, apiUrl: env.emulator.apiUrl });
      sandbox = await daytona.get(machine.ref.slice("daytona:".length));
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("keeps a running command's script, log and FIFOs under $HOME/.daytona/sessions, and its exit code after", async () => {
      // While a command runs: its script, log and FIFOs, no exit_code yet (execute.go cmdWrapperFormat).
      const runningId = `running-${Date.now()}`;
      await sandbox.process.createSession(runningId);
      const slow = await sandbox.process.executeSessionCommand(runningId, { command: "sleep 3", runAsync: true });
      const folder = `${sessions}/${runningId}/${slow.cmdId}/`;
      const during = text((await machine.exec({ shell: `ls ${folder}` })).stdout).split("\n");
      expect(during).toEqual(
        expect.arrayContaining(["cmd.sh", "input.pipe", "output.log", "stderr.pipe", "stdout.pipe"]),
      );
      expect(during).not.toContain("exit_code");
      await sandbox.process.deleteSession(runningId);
      const { sessionId, cmdId } = await runInSession("echo done");
      const after = text((await machine.exec({ shell: `ls ${sessions}/${sessionId}/${cmdId}/` })).stdout).split("\n");
      expect(after).toEqual(expect.arrayContaining(["cmd.sh", "exit_code", "output.log"]));
      expect(after).not.toContain("input.pipe"); // the wrapper removes its FIFOs
      const script = await machine.exec({ shell: `cat ${sessions}/${sessionId}/${cmdId}/cmd.sh` });
      expect(text(script.stdout)).toBe("echo done");
      await sandbox.process.deleteSession(sessionId);
      const gone = await machine.exec({ shell: `test -e ${sessions}/${sessionId} && echo kept || echo removed` });
      expect(text(gone.stdout)).toBe("removed\n"); // delete.go Delete removes the session's folder
    }, 60_000);

    it("labels every line of the log 01 01 01 or 02 02 02 and ends a last partial line with a newline", async () => {
      const { sessionId, cmdId } = await runInSession("echo out; sleep 0.2; echo err >&2; sleep 0.2; printf partial");
      const logs = await sandbox.process.getSessionCommandLogs(sessionId, cmdId);
      expect(logs.output).toBe("\x01\x01\x01out\n\x02\x02\x02err\n\x01\x01\x01partial\n");
      expect({ stdout: logs.stdout, stderr: logs.stderr }).toEqual({ stdout: "out\npartial\n", stderr: "err\n" });
      // The SDK's websocket demultiplexer sees the same labels.
      const streamed = { out: "", err: "" };
      await sandbox.process.getSessionCommandLogs(
        sessionId,
        cmdId,
        (chunk) => {
          streamed.out += chunk;
        },
        (chunk) => {
          streamed.err += chunk;
        },
      );
      expect(streamed).toEqual({ out: "out\npartial\n", err: "err\n" });
      await sandbox.process.deleteSession(sessionId);
    }, 60_000);

    it("runs a session's commands in one long-lived shell: a cd and a variable stay for the next command", async () => {
      const sessionId = `shell-${Date.now()}`;
      await sandbox.process.createSession(sessionId);
      await sandbox.process.executeSessionCommand(sessionId, { command: "cd /tmp && kept=yes" });
      const next = await sandbox.process.executeSessionCommand(sessionId, { command: 'echo "$PWD $kept $$"' });
      const again = await sandbox.process.executeSessionCommand(sessionId, { command: "echo $$" });
      const [pwd, kept, pid] = (next.stdout ?? "").trim().split(" ");
      expect([pwd, kept]).toEqual(["/tmp", "yes"]);
      expect((again.stdout ?? "").trim()).toBe(pid);
      await sandbox.process.deleteSession(sessionId);
    }, 60_000);

    it("answers 410 to input for a command the daemon knows has ended", async () => {
      const { sessionId, cmdId } = await runInSession("true");
      const refused = await sandbox.process
        .sendSessionCommandInput(sessionId, cmdId, "late")
        .then(() => undefined)
        .catch((error: unknown) => error as { statusCode?: number });
      expect(refused?.statusCode).toBe(410);
      await sandbox.process.deleteSession(sessionId);
    }, 60_000);

    it("echoes input to the log as stdout unless suppressed, and answers 500 once the ended command's FIFO is gone", async () => {
      const sessionId = `input-${Date.now()}`;
      await sandbox.process.createSession(sessionId);
      const { cmdId } = await sandbox.process.executeSessionCommand(sessionId, {
        command: "read line; echo got-$line",
        runAsync: true,
      });
      // The answer to exec comes before the shell made the command's FIFOs (execute.go writes the wrapper and
      // answers): input sent at once may find none and answer 500, so it is sent again, as the provider's retry does.
      await expect
        .poll(
          () =>
            sandbox.process
              .sendSessionCommandInput(sessionId, cmdId as string, "hi")
              .then(() => "sent")
              .catch((error: unknown) => String((error as { statusCode?: number }).statusCode)),
          { timeout: 10_000 },
        )
        .toBe("sent");
      // Both lines, stdout-labelled; the echo is appended after the FIFO write, so the command's answer may come first.
      const echoed = ["\x01\x01\x01hi\n\x01\x01\x01got-hi\n", "\x01\x01\x01got-hi\n\x01\x01\x01hi\n"];
      await expect
        .poll(async () => (await sandbox.process.getSessionCommandLogs(sessionId, cmdId as string)).output, {
          timeout: 10_000,
        })
        .toSatisfy((output: string) => echoed.includes(output));
      // Ended, its exit code not yet read through the daemon: the input FIFO is gone (input.go:40-44 answers 500).
      const ended = await sandbox.process.executeSessionCommand(sessionId, { command: "true", runAsync: true });
      await expect
        .poll(async () => text((await machine.exec({ shell: `ls ${sessions}/${sessionId}/${ended.cmdId}/` })).stdout), {
          timeout: 10_000,
        })
        .toContain("exit_code");
      const refused = await sandbox.process
        .sendSessionCommandInput(sessionId, ended.cmdId as string, "late")
        .then(() => undefined)
        .catch((error: unknown) => error as { statusCode?: number });
      expect(refused?.statusCode).toBe(500);
      await sandbox.process.deleteSession(sessionId);
    }, 60_000);

    it("closes a followed log a second after the exit code, as the daemon's reader does", async () => {
      const { sessionId, cmdId } = await runInSession("echo quick");
      const started = Date.now();
      let got = "";
      await sandbox.process.getSessionCommandLogs(
        sessionId,
        cmdId,
        (chunk) => {
          got += chunk;
        },
        () => {},
      );
      expect(got).toBe("quick\n");
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      await sandbox.process.deleteSession(sessionId);
    }, 30_000);

    it("gives the sandbox Docker's default 64 MiB /dev/shm, as the runner sets no ShmSize", async () => {
      const df = text((await machine.exec({ shell: "df -k /dev/shm | tail -1" })).stdout)
        .trim()
        .split(/\s+/);
      expect(Number(df[1])).toBe(65_536);
    });

    it("after 100 commands an exported home holds no daemon file, and no session folder is left", async () => {
      await machine.files.write("notes/kept.txt", new TextEncoder().encode("kept"));
      for (let i = 0; i < 100; i++) await machine.exec({ argv: ["true"] });
      const exported = await machine.files.exportWorkspace();
      const names = await tarNames(exported);
      expect(names).toEqual(expect.arrayContaining([expect.stringMatching(/notes\/kept\.txt$/)]));
      expect(names.filter((n) => /\.daytona|output\.log|exit_code|cmd\.sh|\.pipe$/.test(n))).toEqual([]);
      // Each command's session was deleted (only the listing's own is there while it runs).
      await expect
        .poll(
          async () => text((await machine.exec({ shell: `ls ${sessions} | grep -c ^agent-computer-` })).stdout).trim(),
          {
            timeout: 10_000,
          },
        )
        .toBe("1");
    }, 240_000);

    it("imports a home while a command runs, in the import's normal time, and the command ends as it should", async () => {
      const home = await tarOf(machine);
      const started = Date.now();
      await machine.files.importWorkspace(Readable.from(home));
      const alone = Date.now() - started;
      const running = machine.exec({ shell: "sleep 4; echo slept" });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const during = Date.now();
      await machine.files.importWorkspace(Readable.from(home));
      const withCommand = Date.now() - during;
      expect(withCommand).toBeLessThan(Math.max(alone * 3, alone + 3_000));
      const result = await running;
      expect({ exitCode: result.exitCode, stdout: text(result.stdout) }).toEqual({ exitCode: 0, stdout: "slept\n" });
    }, 120_000);
  });

  /** The names in a tar stream, as `tar -t` lists them. */
  async function tarNames(tar: Readable): Promise<string[]> {
    const child = spawn("tar", ["-tf", "-"], { stdio: ["pipe", "pipe", "inherit"] });
    tar.pipe(child.stdin);
    let listing = "";
    child.stdout.on("data", (chunk: Buffer) => {
      listing += chunk.toString("utf8");
    });
    await new Promise((resolve) => child.once("close", resolve));
    return listing.split("\n").filter(Boolean);
  }

  /** A small home exported from the machine, to import again. */
  async function tarOf(m: Machine): Promise<Buffer> {
    await m.files.write("notes/a.txt", new TextEncoder().encode("a home"));
    const chunks: Buffer[] = [];
    for await (const chunk of await m.files.exportWorkspace()) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}
