// A child of host-processes.test.ts, run as root in a Docker container
// (which has no CAP_SYS_PTRACE) with a host computer whose commands run as
// an ordinary user. It starts a process in a session of its own inside
// the computer, stops the computer, and prints whether that process is
// gone and whether this app could read another user's environment.
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { hostProvider } from "../src/host-provider.js";

const [uid, gid, path] = process.argv.slice(2) as [string, string, string];

function readsAnotherUsersEnvironment(): boolean {
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      readFileSync(`/proc/${name}/environ`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EACCES") return false;
    }
  }
  return true;
}

/** Whether `pid` has ended (or is a zombie its init has yet to reap) within 5 s. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      if (/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"))) return true;
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const dataDir = mkdtempSync("/tmp/host-computers-");
chmodSync(dataDir, 0o755);
const provider = hostProvider({ dataDir, path, user: { uid: Number(uid), gid: Number(gid) } });
const machine = await provider.provision({ computerId: "unprivileged", homeKey: "unprivileged" });
const started = await machine.exec({ shell: "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!" });
const pid = Number(Buffer.from(started.stdout).toString("utf8").trim());
const readsOthers = readsAnotherUsersEnvironment();
await machine.stop();
console.log(JSON.stringify({ pid, readsOthers, gone: await gone(pid) }));
