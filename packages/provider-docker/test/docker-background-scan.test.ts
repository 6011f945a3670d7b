import type { ExecRequest, ExecResult, Machine } from "@agent-computer/core";
import {
  BACKGROUND_MARKER_DIR,
  cancelBackgroundWork,
  computerSeccompProfile,
  scanBackgroundWork,
} from "@agent-computer/desktop-runtime";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runContainerCommand } from "../src/container-command.js";
import type { DockerMachine } from "../src/index.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The background-work scanner in the computer image, on real processes:
// markers inherited by a child, duplicated, deleted while open, held by
// another uid; an unreadable proc root is `unknown` and signals nothing;
// a cancel re-checks each holder right before its signal.
const HOME = "/home/computer";
const MARKERS = `${HOME}/${BACKGROUND_MARKER_DIR}`;
const env = await dockerTestEnvironment("docker background-work scanner");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  const provider = env.provider({ dataDir });
  let machine: Machine;
  let container: Docker.Container;
  const pids = new Map<string, number>();

  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");
  /** Runs a shell command as `user` through the engine (the provider always runs uid 1000). */
  const execAs = async (target: Docker.Container, user: string, shell: string): Promise<string> => {
    const result = await runContainerCommand(target, {
      argv: ["sh", "-c", shell],
      workingDir: "/",
      user,
      maxOutputBytes: 1024 * 1024,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
    });
    if (result.exitCode !== 0) throw new Error(`"${shell}" as ${user} failed: ${text(result.stderr)}`);
    return text(result.stdout);
  };
  /** A machine whose exec runs as `user` in `target`: the scanner's view with that user's rights. */
  const machineAs = (target: Docker.Container, user: string): Pick<Machine, "exec" | "workspacePath"> => ({
    workspacePath: HOME,
    exec: (req: ExecRequest): Promise<ExecResult> =>
      runContainerCommand(target, {
        argv: req.argv ?? ["sh", "-c", req.shell as string],
        workingDir: "/",
        user,
        maxOutputBytes: req.maxOutputBytes ?? 1024 * 1024,
        ...(req.timeoutMs ? { timeoutMs: req.timeoutMs } : {}),
        signal: new AbortController().signal,
      }),
  });
  const alive = async (pid: number) =>
    (await machine.exec({ shell: `[ -d /proc/${pid} ] && ! grep -q '^State:.*Z' /proc/${pid}/status` })).exitCode === 0;
  /** Starts a holder as uid 1000; its shell writes the holder's pid to /tmp/bg/<name>.pid. */
  const hold = async (name: string, shell: string) => {
    const result = await machine.exec({ shell: `mkdir -p /tmp/bg ${MARKERS}; export M=${MARKERS}; ${shell}` });
    if (result.exitCode !== 0) throw new Error(`holder ${name} did not start: ${text(result.stderr)}`);
    pids.set(name, Number(text((await machine.exec({ shell: `cat /tmp/bg/${name}.pid` })).stdout).trim()));
  };

  describe("docker background-work scanner", () => {
    beforeAll(async () => {
      machine = await provider.provision({ computerId: "background", homeKey: `background-${Date.now()}` });
      container = env.docker.getContainer((machine as DockerMachine).containerId);
      // Inherited: the shell that opened the marker exits, its child keeps it.
      await hold(
        "inherit",
        `sh -c 'exec 9>>$M/inherit.marker; sleep 301 >/dev/null 2>&1 & echo $! >/tmp/bg/inherit.pid'`,
      );
      // Duplicated: two descriptors of one marker in one process.
      await hold(
        "dup",
        `setsid sh -c 'exec 7>>$M/dup.marker 8>&7; exec sleep 302' >/dev/null 2>&1 & echo $! >/tmp/bg/dup.pid`,
      );
      // Deleted but open: the job still runs after its marker file is gone.
      await hold(
        "deleted",
        `setsid sh -c 'exec 7>>$M/deleted.marker; rm $M/deleted.marker; exec sleep 303' >/dev/null 2>&1 & echo $! >/tmp/bg/deleted.pid`,
      );
      // Another uid (only the engine can start one: the computer runs everything as 1000):
      // a uid-1001 shell's child holds a marker the computer's user made.
      await machine.exec({ shell: `touch ${MARKERS}/other.marker && chmod 644 ${MARKERS}/other.marker` });
      await execAs(
        container,
        "1001:1001",
        `sh -c 'exec 7<${MARKERS}/other.marker; sleep 304 >/dev/null 2>&1 & echo $! >/tmp/other.pid'`,
      );
      pids.set("other", Number(await execAs(container, "1001:1001", "cat /tmp/other.pid")));
    }, 120_000);
    afterAll(async () => {
      await machine?.destroy();
    });

    it("finds inherited, duplicated and deleted-but-open markers; another uid's it may not read are counted, not guessed", async () => {
      const scan = await scanBackgroundWork(machine);
      if (scan.status !== "ok") throw new Error(`scan was ${scan.status}: ${scan.reason}`);
      const byJob = (job: string) => scan.holders.filter((h) => h.job === job);
      expect(byJob("inherit")).toEqual([
        {
          pid: pids.get("inherit"),
          uid: 1000,
          marker: `${MARKERS}/inherit.marker`,
          job: "inherit",
          deleted: false,
          cmd: "sleep 301",
        },
      ]);
      expect(byJob("dup")).toEqual([expect.objectContaining({ pid: pids.get("dup"), uid: 1000, deleted: false })]);
      expect(byJob("deleted")).toEqual([
        expect.objectContaining({
          pid: pids.get("deleted"),
          marker: `${MARKERS}/deleted.marker`,
          deleted: true,
          cmd: "sleep 303",
        }),
      ]);
      // uid 1001's descriptors are closed to uid 1000 (no CAP_SYS_PTRACE): skipped and counted.
      expect(byJob("other")).toEqual([]);
      expect(scan.unreadable).toBeGreaterThanOrEqual(1);

      const one = await scanBackgroundWork(machine, undefined, { job: "dup" });
      expect(one).toMatchObject({ status: "ok", holders: [expect.objectContaining({ job: "dup" })] });
      expect(one.status === "ok" && one.holders).toHaveLength(1);
    }, 60_000);

    it("finds a marker held by a child of another uid when it may read every process", async () => {
      // The same image as root with CAP_SYS_PTRACE: what a scan of every uid needs.
      const privileged = await env.docker.createContainer({
        Image: env.image,
        Cmd: ["sleep", "infinity"],
        User: "0",
        HostConfig: {
          Init: true,
          NetworkMode: "none",
          CapAdd: ["SYS_PTRACE"],
          SecurityOpt: [`seccomp=${computerSeccompProfile()}`, "no-new-privileges:true"],
        },
      });
      try {
        await privileged.start();
        await execAs(
          privileged,
          "0",
          `mkdir -p ${MARKERS} && cd /tmp && setsid sh -c '
exec 7>>${MARKERS}/other.marker
setpriv --reuid=1001 --regid=1001 --clear-groups sleep 305 & echo $! >/tmp/child.pid
exec 7>&-
exec 6>>${MARKERS}/mine.marker
setpriv --reuid=1000 --regid=1000 --clear-groups sleep 306 & echo $! >/tmp/mine.pid
exec 6>&-
exec sleep 307' >/dev/null 2>&1 &
for i in $(seq 1 50); do [ -s /tmp/mine.pid ] && exit 0; sleep 0.1; done; exit 1`,
        );
        const child = Number(await execAs(privileged, "0", "cat /tmp/child.pid"));
        const mine = Number(await execAs(privileged, "0", "cat /tmp/mine.pid"));
        const scan = await scanBackgroundWork(machineAs(privileged, "0"));
        if (scan.status !== "ok") throw new Error(`scan was ${scan.status}: ${scan.reason}`);
        expect(scan.holders).toEqual([
          expect.objectContaining({ pid: child, uid: 1001, job: "other", cmd: "sleep 305" }),
          expect.objectContaining({ pid: mine, uid: 1000, job: "mine", cmd: "sleep 306" }),
        ]);
        expect(scan.unreadable).toBe(0);
      } finally {
        await privileged.remove({ force: true });
      }
    }, 120_000);

    it("is unknown when the proc root cannot be read or python3 is missing, and then signals nothing", async () => {
      await machine.exec({ shell: "mkdir -p /tmp/noproc && chmod 000 /tmp/noproc" });
      const unreadable = { command: ["scan-background", "--proc-root", "/tmp/noproc"] };
      const scan = await scanBackgroundWork(machine, undefined, unreadable);
      expect(scan).toMatchObject({ status: "unknown", reason: expect.stringContaining("/tmp/noproc") });
      const cancel = await cancelBackgroundWork(machine, undefined, { ...unreadable, signal: "KILL" });
      expect(cancel).toMatchObject({ status: "unknown", signalled: [], uncertain: false });
      for (const name of ["inherit", "dup", "deleted"]) expect(await alive(pids.get(name) as number)).toBe(true);

      // No python3 on PATH: the script's `env python3` exits 127.
      const noPython = {
        command: ["sh", "-c", 'PATH=/opt/agent-computer/bin exec scan-background "$@"', "scan-background"],
      };
      expect(await scanBackgroundWork(machine, undefined, noPython)).toMatchObject({
        status: "unknown",
        reason: expect.stringContaining("exit 127"),
      });
      expect(await cancelBackgroundWork(machine, undefined, noPython)).toMatchObject({
        status: "unknown",
        signalled: [],
        uncertain: false,
      });
      expect(await alive(pids.get("dup") as number)).toBe(true);
    }, 60_000);

    it("cancels: signals each holder only after re-checking that it still holds its marker", async () => {
      await hold(
        "steady",
        `setsid sh -c 'exec 7>>$M/recheck.marker; exec sleep 308' >/dev/null 2>&1 & echo $! >/tmp/bg/steady.pid`,
      );
      // Drops its marker on SIGUSR1, between the scan and the re-check.
      await hold(
        "flaky",
        `setsid python3 -c '
import os, signal, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
signal.signal(signal.SIGUSR1, lambda *_: os.close(fd))
while True: time.sleep(1)
' $M/recheck.marker >/dev/null 2>&1 & echo $! >/tmp/bg/flaky.pid`,
      );
      const steady = pids.get("steady") as number;
      const flaky = pids.get("flaky") as number;
      const cancelling = cancelBackgroundWork(machine, undefined, {
        job: "recheck",
        command: ["scan-background", "--pause-before-signal-ms", "4000"],
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await machine.exec({ shell: `kill -USR1 ${flaky}` });
      const cancel = await cancelling;
      if (cancel.status !== "ok") throw new Error(`cancel was ${cancel.status}: ${cancel.reason}`);
      expect(cancel.holders.map((h) => h.pid).sort()).toEqual([steady, flaky].sort());
      expect(cancel.signalled).toEqual([steady]);
      expect(cancel.skipped).toEqual([{ pid: flaky, reason: "no longer holds a marker" }]);
      expect(cancel.signal).toBe("TERM");
      for (let i = 0; i < 50 && (await alive(steady)); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await alive(steady)).toBe(false);
      expect(await alive(flaky)).toBe(true);

      // Everything else the computer's user holds; the other uid's holder stays (it was never seen).
      const all = await cancelBackgroundWork(machine);
      if (all.status !== "ok") throw new Error(`cancel was ${all.status}: ${all.reason}`);
      expect([...all.signalled].sort()).toEqual(
        [pids.get("inherit"), pids.get("dup"), pids.get("deleted")].sort() as number[],
      );
      for (let i = 0; i < 50 && (await alive(pids.get("dup") as number)); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await scanBackgroundWork(machine)).toMatchObject({ status: "ok", holders: [] });
      await machine.exec({ shell: `kill ${flaky}` });
    }, 90_000);
  });
}
