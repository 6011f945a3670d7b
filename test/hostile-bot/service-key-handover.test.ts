import type { Machine } from "@agent-computer/core";
import { LinuxDesktopRuntime } from "@agent-computer/desktop-runtime";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 45, finding 6 (a shared display, displayContainer: false): the host
// hands the resident service its key on the stdin of `desktop service`. The
// image's `desktop` is a shell script that execs the execute-only node, and
// until it does, a bot of the same uid could open /proc/<pid>/fd/0 and read
// the key (14 to 21 of 40 hand-overs). The hand-over now execs that node
// directly (desktop-channel.ts, SERVICE_HAND_OVER_COMMAND): no process the
// bot can inspect ever holds the key. The thief below reads every stdin of
// a hand-over it can open, as fast as it can, while the host hands over 20
// keys through 20 new runtimes (before the change it took the first).
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: service key hand-over",
);

const THIEF = String.raw`
import os, time
out = open("/tmp/stolen", "ab", buffering=0)
tried = set()
deadline = time.time() + 120
while time.time() < deadline and not os.path.exists("/tmp/thief-stop"):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if b"service" not in cmd or not any(a.endswith(b"desktop") or a.endswith(b"desktop.mjs") for a in cmd):
            continue
        if pid not in tried:
            tried.add(pid)
            open("/tmp/thief-seen", "ab").write(pid.encode() + b"\n")
        try:
            fd = os.open("/proc/%s/fd/0" % pid, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            data = os.read(fd, 4096)
            if data:
                out.write(pid.encode() + b":" + data + b"\n")
        except OSError:
            pass
        finally:
            os.close(fd)
`;

if (!env.missing) {
  describe("hostile bot: service key hand-over", () => {
    const dataDir = temporaryDataDir();
    let machine: Machine | undefined;
    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    });

    it("hands the service its key where no process of the bot's user can read it", async () => {
      const provider = env.provider({ dataDir: await dataDir, displayContainer: false });
      machine = await provider.provision({ computerId: "key-thief", homeKey: `key-thief-${Date.now()}` });
      const computer = machine;
      await computer.files.write("thief.py", new TextEncoder().encode(THIEF));
      const started = await computer.exec({
        shell:
          "setsid nohup python3 thief.py >/tmp/thief.log 2>&1 </dev/null & sleep 0.5; pgrep -f thief.py >/dev/null",
      });
      expect(started.exitCode).toBe(0);
      for (let i = 0; i < 20; i++) {
        // A new runtime is a new service client: its first call hands over a key of its own.
        const desktops = new LinuxDesktopRuntime(computer, { transport: "service" });
        const desktop = await desktops.openDesktop("thief-target");
        expect(desktop.display).toBe(":100");
      }
      await computer.exec({ shell: "touch /tmp/thief-stop; sleep 0.3" });
      const read = async (file: string) =>
        new TextDecoder().decode(
          (await computer.exec({ argv: ["sh", "-c", `cat ${file} 2>/dev/null || true`] })).stdout,
        );
      // The thief ran and saw hand-overs, and took nothing: no hand-over's stdin was open to it.
      expect(await read("/tmp/thief.log")).toBe("");
      expect(await read("/tmp/thief-seen")).toMatch(/^\d+\n/);
      expect(await read("/tmp/stolen")).toBe("");
    }, 240_000);
  });
}
