import { CommandExitError, InvalidArgumentError, Sandbox, SandboxNotFoundError } from "e2b";
import { Sandbox as NovitaSandbox } from "novita-sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { e2bTestEnvironment, TEST_TEMPLATE } from "./e2b-test-environment.js";

// What the real service does that a client must live with, through the real
// `e2b` SDK (and `novita-sandbox` for Novita's legacy domains) against the
// emulator: each test is one behaviour of E2B's published sources, cited.
const KEEPALIVE_MS = 300;

/** The SDK's envd process client (its protected `rpc`), as far as these tests use it. */
interface ProcessClient {
  start(
    request: { process: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string }; stdin: boolean },
    options: { headers: Record<string, string> },
  ): AsyncIterable<{
    event?: {
      event:
        | { case: "data"; value: { output: { case: string; value: Uint8Array } } }
        | { case: "end"; value: { exitCode: number; exited: boolean; status: string; error?: string } }
        | { case: "start" | "keepalive" | undefined; value?: unknown };
    };
  }>;
}
const env = await e2bTestEnvironment("e2b: the service's semantics", "e2b", { keepaliveMs: KEEPALIVE_MS });
if (!env.missing) {
  const { emulator } = env;
  const connection = () => ({
    apiKey: env.apiKey,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
    requestTimeoutMs: 30_000,
  });
  const owned: string[] = [];
  const create = async (opts: Parameters<typeof Sandbox.create>[1] = {}) => {
    const sandbox = await Sandbox.create(TEST_TEMPLATE, { ...connection(), timeoutMs: 600_000, ...opts });
    owned.push(sandbox.sandboxId);
    return sandbox;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /** Runs argv as envd's Start gets it (no login shell in between), through the SDK's own Connect client. */
  async function startRaw(sandbox: Sandbox, argv: string[], options: { cwd?: string; user?: string } = {}) {
    const [cmd, ...args] = argv as [string, ...string[]];
    const rpc = (sandbox.commands as unknown as { rpc: ProcessClient }).rpc;
    const events = rpc.start(
      { process: { cmd, args, envs: {}, ...(options.cwd ? { cwd: options.cwd } : {}) }, stdin: false },
      {
        headers: {
          Authorization: `Basic ${Buffer.from(`${options.user ?? "user"}:`).toString("base64")}`,
          "Keepalive-Ping-Interval": "50",
        },
      },
    );
    const kinds: string[] = [];
    let stdout = "";
    let end: { exitCode: number; exited: boolean; status: string; error?: string } | undefined;
    for await (const message of events) {
      const event = message.event?.event;
      kinds.push(event?.case ?? "none");
      if (event?.case === "data" && event.value.output.case === "stdout")
        stdout += Buffer.from(event.value.output.value).toString("utf8");
      if (event?.case === "end") end = event.value;
    }
    return { kinds, stdout, end };
  }

  describe("e2b: the service's semantics", () => {
    afterAll(async () => {
      for (const id of owned) await Sandbox.kill(id, connection()).catch(() => false);
    }, 60_000);

    it("keeps an absolute end: set at create, moved later only by connect, set by set-timeout; then pauses or kills", async () => {
      // api/internal/orchestrator/create_instance.go (endTime = start + timeout), keep_alive.go
      // (connect never shortens, set-timeout does), evictor/evict.go (pause if autoPause, else kill).
      const [paused, killed, moved] = await Promise.all([
        create({ timeoutMs: 5_000, lifecycle: { onTimeout: "pause" } }),
        create({ timeoutMs: 5_000 }),
        create({ timeoutMs: 60_000 }),
      ]);
      const info = await Sandbox.getInfo(paused.sandboxId, connection());
      expect(info.endAt.valueOf() - info.startedAt.valueOf()).toBeGreaterThanOrEqual(4_000);
      expect(info.endAt.valueOf() - info.startedAt.valueOf()).toBeLessThanOrEqual(5_000);
      const first = (await Sandbox.getInfo(moved.sandboxId, connection())).endAt;
      await Sandbox.connect(moved.sandboxId, { ...connection(), timeoutMs: 10_000 });
      expect((await Sandbox.getInfo(moved.sandboxId, connection())).endAt).toEqual(first);
      await moved.setTimeout(3_000);
      const shortened = (await Sandbox.getInfo(moved.sandboxId, connection())).endAt.valueOf();
      expect(shortened).toBeLessThan(first.valueOf() - 30_000);
      expect(shortened - Date.now()).toBeLessThanOrEqual(3_000);

      await sleep(Math.max(0, info.endAt.valueOf() - Date.now()) + 1_500);
      expect((await Sandbox.getInfo(paused.sandboxId, connection())).state).toBe("paused");
      expect(await paused.isRunning()).toBe(false);
      await expect(Sandbox.getInfo(killed.sandboxId, connection())).rejects.toBeInstanceOf(SandboxNotFoundError);
      await expect(Sandbox.getInfo(moved.sandboxId, connection())).rejects.toBeInstanceOf(SandboxNotFoundError);
      // Connect resumes it, with a new start and end (sandbox_connect.go: the create path).
      const resumed = await Sandbox.connect(paused.sandboxId, { ...connection(), timeoutMs: 60_000 });
      const again = await Sandbox.getInfo(resumed.sandboxId, connection());
      expect(again.state).toBe("running");
      expect(again.startedAt.valueOf()).toBeGreaterThan(info.startedAt.valueOf());
      expect((await resumed.commands.run("echo back")).stdout).toBe("back\n");
    }, 90_000);

    it("sends a keepalive on a quiet process stream every interval", async () => {
      // envd services/process/start.go: a keepalive event when no data went out for the
      // interval (Keepalive-Ping-Interval; the emulator's keepaliveMs here).
      const sandbox = await create();
      const run = await startRaw(sandbox, ["sleep", "1.6"]);
      expect(run.kinds[0]).toBe("start");
      expect(run.kinds.at(-1)).toBe("end");
      expect(run.kinds.filter((k) => k === "keepalive").length).toBeGreaterThanOrEqual(3);
    }, 60_000);

    it("reports a command killed by a signal with exit code -1 and the signal, not 137", async () => {
      // envd handler/handler.go Wait: Go's ProcessState (ExitCode -1, Exited false,
      // "signal: killed") and cmd.Wait's error.
      const sandbox = await create();
      const killedBySdk = await sandbox.commands.run("sleep 30", { background: true });
      expect(await sandbox.commands.kill(killedBySdk.pid)).toBe(true);
      const error = (await killedBySdk.wait().catch((e: unknown) => e)) as CommandExitError;
      expect(error).toBeInstanceOf(CommandExitError);
      expect(error.exitCode).toBe(-1);
      expect(error.error).toBe("signal: killed");
      // A signal from inside the sandbox, to the pid envd reported (the command's own).
      const leader = await sandbox.commands.run("exec sleep 30", { background: true });
      await sandbox.commands.run(`kill -TERM ${leader.pid}`);
      const terminated = (await leader.wait().catch((e: unknown) => e)) as CommandExitError;
      expect({ exitCode: terminated.exitCode, error: terminated.error }).toEqual({
        exitCode: -1,
        error: "signal: terminated",
      });
      // A plain non-zero exit is an exit, with cmd.Wait's error.
      const exited = (await sandbox.commands.run("exit 137").catch((e: unknown) => e)) as CommandExitError;
      expect({ exitCode: exited.exitCode, error: exited.error }).toEqual({ exitCode: 137, error: "exit status 137" });
    }, 60_000);

    it("fails a start in a missing cwd with invalid_argument, before any event", async () => {
      // envd handler/handler.go New: "cwd '<path>' does not exist", connect.CodeInvalidArgument.
      const sandbox = await create();
      const error = await sandbox.commands.run("true", { cwd: "/no/such/dir" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toContain("cwd '/no/such/dir' does not exist");
      // A relative cwd is the user's home's (permissions/path.go ExpandAndResolve).
      expect((await startRaw(sandbox, ["pwd"], { cwd: "sub/.." })).stdout).toBe("/home/user\n");
    }, 60_000);

    it("composes the environment as envd does: HOME from the sandbox's variables, nothing from the image", async () => {
      // envd handler/handler.go New: PATH (envd's own), HOME from passwd, USER, LOGNAME,
      // then the sandbox's variables (so its HOME wins), then the request's.
      const sandbox = await create({ envs: { HOME: "/home/user/work", FOO: "bar" } });
      const { stdout } = await startRaw(sandbox, ["env"]);
      const vars = Object.fromEntries(stdout.split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2)));
      expect(vars).toMatchObject({ HOME: "/home/user/work", USER: "user", LOGNAME: "user", FOO: "bar" });
      // envd runs under systemd without Environment=PATH: the image's ENV (PATH, LANG, LC_ALL) is not
      // inherited (e2b-dev/infra issue #2268).
      expect(vars.PATH).toBe("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
      expect(vars.LC_ALL).toBeUndefined();
      const plain = await create();
      expect((await startRaw(plain, ["sh", "-c", 'echo "$HOME"'])).stdout).toBe("/home/user\n");
      expect((await startRaw(plain, ["sh", "-c", 'echo "$HOME"'], { user: "root" })).stdout).toBe("/root\n");
    }, 60_000);

    it("takes the /files user from the username query parameter", async () => {
      // envd api/download.go, upload.go: params.Username, else the default user; paths resolve
      // against that user's home; the file is chowned to that user.
      const sandbox = await create();
      const asRoot = await sandbox.files.write("relative.txt", "r", { user: "root" });
      expect(asRoot.path).toBe("/root/relative.txt");
      await sandbox.files.write("/tmp/owned.txt", "o", { user: "root" });
      const asDefault = await sandbox.files.write("mine.txt", "m");
      expect(asDefault.path).toBe("/home/user/mine.txt");
      const owners = await sandbox.commands.run("stat -c %U /tmp/owned.txt /home/user/mine.txt", { user: "root" });
      expect(owners.stdout).toBe("root\nuser\n");
      expect(await sandbox.files.read("relative.txt", { user: "root" })).toBe("r");
    }, 60_000);

    it("runs as the template's user, which a template build adds after the image's uid 1000", async () => {
      // orchestrator/pkg/template/build/commands/user.go: `useradd --create-home --shell
      // /bin/bash user` when `id -u user` fails; the computer image's uid 1000 is `computer`.
      const sandbox = await create();
      const ids = await sandbox.commands.run(
        'id -u; id -un; getent passwd user | cut -d: -f6,7; id -un 1000; echo "$HOME"',
      );
      expect(ids.stdout).toBe("1001\nuser\n/home/user:/bin/bash\ncomputer\n/home/user\n");
    }, 60_000);

    it("gives Novita sandbox ids a -<clientID> suffix on its legacy domains, and takes them back", async () => {
      // novita-sandbox 2.1.1 dist/index.js createSandbox (legacy: `${sandboxID}-${clientID}`);
      // the API strips one suffix (api/internal/utils/split.go ShortID); clientID is a constant
      // (shared/pkg/consts/sandboxes.go).
      const legacy = { ...connection(), domain: "sandbox.novita.ai" };
      const sandbox = await NovitaSandbox.create(TEST_TEMPLATE, { ...legacy, timeoutMs: 600_000 });
      const [id, suffix] = sandbox.sandboxId.split("-");
      owned.push(id as string);
      expect(suffix).toBe("6532622b");
      expect((await sandbox.commands.run("echo hi")).stdout).toBe("hi\n");
      expect((await NovitaSandbox.getInfo(sandbox.sandboxId, legacy)).sandboxId).toBe(sandbox.sandboxId);
      expect(await NovitaSandbox.kill(sandbox.sandboxId, legacy)).toBe(true);
      expect(emulator.sandbox(id as string)).toBeUndefined();
    }, 60_000);

    it("held every exchange so far to E2B's published definition", () => {
      expect(emulator.recorder.calls.length).toBeGreaterThan(20);
      emulator.recorder.assertNoViolations();
    });
  });
}
