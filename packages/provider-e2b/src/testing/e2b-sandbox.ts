import type { ServerResponse } from "node:http";
import { COMPUTER_SHM_BYTES, computerSeccompProfile } from "@agent-computer/desktop-runtime";
import type { ComputerContainers } from "@agent-computer/testing/emulator";
import type { SandboxEgress } from "./e2b-network-fence.js";
import { LEADER_DIR, LEADER_PATH, LEADER_SCRIPT } from "./envd-leader.js";
import type { EnvdProcess, RetainedEnd } from "./envd-processes.js";

/** The envd version the emulator reports: envd's at infra HEAD (packages/envd/pkg/version.go). */
export const EMULATED_ENVD_VERSION = "0.6.13";

/**
 * What every sandbox answer carries as `clientID`: a constant of the API
 * (infra packages/shared/pkg/consts/sandboxes.go; create_instance.go,
 * sandbox_get.go, sandboxes_list.go). novita-sandbox appends `-<clientID>`
 * to ids on its legacy domains; the API takes it off again (ShortID).
 */
export const CLIENT_ID = "6532622b";

/**
 * The template's user and envd's default user: a v2 template build adds
 * `user` (orchestrator/pkg/template/build/config/config.go TemplateDefaultUser)
 * and the final layer's user becomes envd's default (phases/finalize/builder.go).
 */
export const TEMPLATE_USER = "user";

/** A passwd entry, as envd's user.Lookup finds it. */
export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export interface EmulatedSandbox {
  id: string;
  templateId: string;
  containerId: string;
  ip: string;
  metadata: Record<string, string>;
  /** The create's `envVars`: every process's sandbox-level variables (envd /init, init.go). */
  envVars: Record<string, string>;
  /** Absent for a v1 create without `secure` (sandbox_create.go): envd then asks for no token. */
  envdAccessToken?: string;
  state: "running" | "paused";
  /** Set on create and on each resume (create_instance.go: startTime after the VM started). */
  startedAt: Date;
  /** The absolute end: timeout from create or resume, moved by connect (only later) and set-timeout. */
  endAt: Date;
  pausedAt?: Date;
  /** Every timeout the sandbox was given, in seconds: on create, on each connect, by setTimeout. */
  timeouts: (number | undefined)[];
  /** `autoPause`: pause at the end instead of being killed (evictor/evict.go). */
  autoPause: boolean;
  autoResume: boolean;
  /** A pause or kill under way: the sweep leaves it alone. */
  changing?: boolean;
  users: Map<string, SandboxUser>;
  processes: Map<number, EnvdProcess>;
  /** Ended processes' end events, kept for late Connects (process/service.go: 30 s). */
  ended: Map<number, RetainedEnd>;
  /** envd answers under way: the edge cuts them when the sandbox pauses or dies. */
  streams: Set<ServerResponse>;
  portListeners: Map<number, { url: string; close: () => void }>;
  /** The egress the orchestrator holds for it (create's `network`, `allow_internet_access`); none: unfenced. */
  egress?: SandboxEgress;
  /** The container of its network fence (e2b-network-fence.ts), while it has one. */
  fenceContainerId?: string;
}

/**
 * What a v2 template build does to the image the emulator's template names,
 * run as root in each new sandbox before its first answer:
 * - the user phase's `USER user` step (orchestrator/pkg/template/build/commands/user.go):
 *   `id -u user`, and only if that fails `useradd --create-home --shell /bin/bash user`,
 *   so on an image that already has uid 1000 (the computer image's `computer`)
 *   `user` gets the next free uid; then the admin group (sudo, else wheel),
 *   `passwd -d`, and a NOPASSWD sudoers line;
 * - finalize/configure.sh: /.e2b, /home/user owned by the user, /usr/local and
 *   /code world-writable.
 * - the base phase's provision.sh: root's password emptied (`passwd -d root`),
 *   which Debian's PAM (`pam_unix nullok`) lets `su` take.
 * The base phase also installs sudo (phases/base/distro/distro.go); an image
 * without it keeps the sudoers line but has no sudo to read it (the
 * emulator reaches no package mirror).
 */
const TEMPLATE_SETUP = String.raw`set -e
id -u user >/dev/null 2>&1 || useradd --create-home --shell /bin/bash user
if getent group sudo >/dev/null; then usermod -aG sudo user; elif getent group wheel >/dev/null; then usermod -aG wheel user; fi
passwd -d user >/dev/null 2>&1 || true
passwd -d root >/dev/null 2>&1 || true
grep -q '^user ALL=(ALL:ALL) NOPASSWD: ALL' /etc/sudoers 2>/dev/null || echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' >> /etc/sudoers
printf 'ENV_ID=%s\nTEMPLATE_ID=%s\nBUILD_ID=%s\n' "$1" "$1" "$2" > /.e2b
mkdir -p /home/user && chown -R user:user /home/user
chmod -R 777 /usr/local
mkdir -p /code && chmod -R 777 /code
mkdir -p -m 0700 ${LEADER_DIR}/status
command -v perl >/dev/null || { echo "no perl in the template image: the emulator's process leader needs it" >&2; exit 3; }
getent passwd`;

/** Starts a sandbox's container from its template's image and applies the template build to it. */
export async function startSandboxMachine(
  containers: ComputerContainers,
  spec: { id: string; image: string; templateId: string; extraHosts?: string[] },
): Promise<{ containerId: string; ip: string; users: Map<string, SandboxUser> }> {
  // The container's main process (its CMD, sleep) runs as the image's uid 1000, as it
  // always did; envd's processes are started by the leader, as their user.
  const { id: containerId, ip } = await containers.create({
    image: spec.image,
    name: spec.id,
    labels: { "agent-computer.e2b-sandbox": spec.id },
    user: "1000:1000",
    hardened: false,
    ...(spec.extraHosts?.length ? { extraHosts: spec.extraHosts } : {}),
    shmBytes: COMPUTER_SHM_BYTES,
    seccompProfile: computerSeccompProfile(),
    files: [{ path: LEADER_PATH, mode: 0o755, body: Buffer.from(LEADER_SCRIPT) }],
  });
  const setup = await containers.run(containerId, ["sh", "-c", TEMPLATE_SETUP, "setup", spec.templateId, spec.id], {
    user: "0:0",
  });
  if (setup.exitCode !== 0) {
    await containers.remove(containerId);
    throw new Error(`the template build failed in the sandbox: ${setup.stderr.toString("utf8").slice(0, 300)}`);
  }
  return { containerId, ip, users: parsePasswd(setup.stdout.toString("utf8")) };
}

/** Reads the passwd table again (a user added since). */
export async function readUsers(containers: ComputerContainers, sandbox: EmulatedSandbox): Promise<void> {
  const { stdout, exitCode } = await containers.run(sandbox.containerId, ["getent", "passwd"], { user: "0:0" });
  if (exitCode === 0) sandbox.users = parsePasswd(stdout.toString("utf8"));
}

/** The user envd would find (user.Lookup), reading passwd again once when it is not known. */
export async function lookUpUser(
  containers: ComputerContainers,
  sandbox: EmulatedSandbox,
  name: string,
): Promise<SandboxUser | undefined> {
  if (!sandbox.users.has(name)) await readUsers(containers, sandbox).catch(() => {});
  return sandbox.users.get(name);
}

function parsePasswd(text: string): Map<string, SandboxUser> {
  const users = new Map<string, SandboxUser>();
  for (const line of text.split("\n")) {
    const [name, , uid, gid, , home] = line.split(":");
    if (name && uid !== undefined && gid !== undefined && home !== undefined)
      users.set(name, { name, uid: Number(uid), gid: Number(gid), home });
  }
  return users;
}

/**
 * permissions/path.go ExpandAndResolve: empty is the default workdir (a v2
 * template built from an image has none, so the user's home), `~` the
 * home, a relative path joined to the home; the result cleaned (Go
 * filepath.Clean: lexical, links not followed). Undefined for `~name`.
 */
export function resolvePath(path: string, home: string): string | undefined {
  let full = path === "" ? home : path;
  if (full.startsWith("~")) {
    if (full.length > 1 && full[1] !== "/") return undefined;
    full = home + full.slice(1);
  }
  if (!full.startsWith("/")) full = `${home}/${full}`;
  const parts: string[] = [];
  for (const part of full.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}
