import { randomBytes } from "node:crypto";
import type { Machine } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Issue 21, finding 5: a bot (uid 1000, like the services) read the proxy
// password out of the relay's memory through /proc/<pid>/mem. The services
// now run from a node binary uid 1000 may execute but not read, so the
// kernel makes them non-dumpable: their memory, environment and descriptors
// are closed to the bot, which still shares their uid.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: service memory",
);

const PROBE = String.raw`
import os, re, sys
secret = sys.stdin.read().strip().encode()
def service_pids():
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"desktop.mjs") for a in cmd):
            verb = cmd[cmd.index(next(a for a in cmd if a.endswith(b"desktop.mjs"))) + 1].decode()
            if verb in ("gateway", "proxy-relay"):
                out[verb] = int(pid)
    return out
def readable(path):
    try:
        with open(path, "rb") as f:
            f.read(1)
        return True
    except OSError:
        return False
pids = service_pids()
for verb, pid in sorted(pids.items()):
    print(verb, "mem" if readable("/proc/%d/mem" % pid) else "-", "environ" if readable("/proc/%d/environ" % pid) else "-", "maps" if readable("/proc/%d/maps" % pid) else "-")
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part in ("environ", "cmdline"):
        try:
            if secret in open("/proc/%s/%s" % (pid, part), "rb").read():
                found.append("%s/%s" % (pid, part))
        except OSError:
            pass
print("found", " ".join(found) or "none")
`;

if (!env.missing) {
  describe("hostile bot: service memory", () => {
    const machines: Machine[] = [];
    afterAll(async () => {
      for (const m of machines) await m.destroy().catch(() => {});
    });

    it("keeps the relay's and the gateway's memory and environment closed to the bot", async () => {
      // The shared display (displayContainer: false), where this defence is what holds: with the
      // default display container the bot's container has no gateway, relay or X server at all
      // (docker-display-container.test.ts).
      const provider = env.provider({ dataDir: await temporaryDataDir(), displayContainer: false });
      const machine = await provider.provision({ computerId: "memory", homeKey: `memory-${Date.now()}` });
      machines.push(machine);
      const password = `relay-password-${randomBytes(8).toString("hex")}`;
      const desktop = await machine.openDesktop?.("bot", undefined, {
        proxy: { server: "http://127.0.0.1:3128", username: "alice", password },
      });
      expect(desktop).toBeDefined();
      // As the bot: the computer's user, the services' own uid.
      await machine.files.write("probe.py", new TextEncoder().encode(PROBE));
      const probe = await machine.exec({
        argv: ["python3", "probe.py"],
        stdin: new TextEncoder().encode(password),
      });
      const report = Buffer.from(probe.stdout).toString("utf8");
      expect(report).toContain("gateway - - -");
      expect(report).toContain("proxy-relay - - -");
      expect(report).toContain("found none");
      // The bot still shares the uid: it may end them (the host then restarts the gateway).
      const who = await machine.exec({ argv: ["sh", "-c", "id -u; kill -0 $(pgrep -f 'desktop[.]mjs gateway')"] });
      expect(who.exitCode).toBe(0);
    }, 120_000);
  });
}
