import { createHash } from "node:crypto";
import type Docker from "dockerode";
import { NETWORK_FENCE_SCRIPT } from "./network-fence-script.js";

// A hosted sandbox's egress, enforced on an emulator's container outside
// its reach (network-fence-script.ts). Each emulator turns its service's
// network settings into FenceRules, citing its service's definition; the
// fence's decision order is E2B's orchestrator's (see the script).

/** What one sandbox may reach. TCP is judged by name (HTTP `Host`, TLS SNI) and address; other protocols by address. */
export interface FenceRules {
  /** Dropped whatever else says, all protocols; a name allowed but resolving here is refused too. */
  alwaysDenied: string[];
  /** IPv4 CIDRs let through (before `deniedCidrs`). */
  allowedCidrs: string[];
  /**
   * IPv4 CIDRs let through on one destination port only (TCP and UDP), before
   * `deniedCidrs`: a service whose allow rules name a port (CreateOS's
   * `host:port`, `cidr:port`). Unset: none.
   */
  allowedCidrPorts?: { cidr: string; port: number }[];
  /** IPv4 CIDRs refused unless allowed by name or CIDR; `0.0.0.0/0` for "nothing else". */
  deniedCidrs: string[];
  /** Names (`example.com`, `*.example.com`, `*`) let through on ports 80 and 443, dialled by the fence itself. */
  allowedDomains: string[];
}

/** Where the fence is told what stands in for the internet in a test. */
export interface FenceSettings {
  /** Addresses the emulator treats as public, though on a private Docker network: the tests' fixture hosts. */
  publicStandIns: string[];
  /** Names the fence (the service's resolver) resolves, standing in for public DNS. */
  hosts: Record<string, string>;
}

/** The fence's image: Debian's iptables and Python 3, made once per engine from the base image. */
const FENCE_BASE = "debian:bookworm-slim";
const FENCE_PACKAGES = ["iptables", "python3"];
const FENCE_IMAGE = `agent-computer-test/network-fence:${createHash("sha256")
  .update(`${FENCE_BASE} ${FENCE_PACKAGES.join(" ")}`)
  .digest("hex")
  .slice(0, 12)}`;
/** The label every fence container (and the image's build container) carries. */
export const FENCE_LABEL = "agent-computer.network-fence";

const imageMade = new WeakMap<Docker, Promise<void>>();

/** Makes the fence image when the engine lacks it: apt in a container of the base image, committed. */
export function ensureFenceImage(docker: Docker): Promise<void> {
  let made = imageMade.get(docker);
  if (!made) {
    made = makeFenceImage(docker);
    made.catch(() => imageMade.delete(docker));
    imageMade.set(docker, made);
  }
  return made;
}

async function makeFenceImage(docker: Docker): Promise<void> {
  const present = await docker
    .getImage(FENCE_IMAGE)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (present) return;
  const container = await docker.createContainer({
    Image: FENCE_BASE,
    Cmd: [
      "sh",
      "-c",
      `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${FENCE_PACKAGES.join(" ")} >/dev/null && rm -rf /var/lib/apt/lists/*`,
    ],
    Labels: { [FENCE_LABEL]: "build" },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0)
      throw new Error(`installing ${FENCE_PACKAGES.join(", ")} into ${FENCE_BASE} failed (${StatusCode})`);
    const [repo, tag] = FENCE_IMAGE.split(":") as [string, string];
    await container.commit({ repo, tag });
  } finally {
    await container.remove({ force: true }).catch(() => {});
  }
}

/**
 * Starts the fence of one sandbox: a container of its own on the bridge,
 * with the sandbox container's network namespace bound in, running the
 * fence program (network-fence-script.ts); resolves once its rules are in
 * and its listeners up. Gives the fence's container id.
 */
export async function startFence(
  docker: Docker,
  sandboxContainerId: string,
  rules: FenceRules,
  settings: FenceSettings,
  labels: Record<string, string>,
): Promise<string> {
  await ensureFenceImage(docker);
  const config = {
    ...rules,
    publicStandIns: settings.publicStandIns,
    hosts: Object.fromEntries(Object.entries(settings.hosts).map(([name, ip]) => [name.toLowerCase(), ip])),
  };
  // The engine's handle on the sandbox's network namespace (its SandboxKey, a path on the engine's host).
  const sandboxKey = (await docker.getContainer(sandboxContainerId).inspect()).NetworkSettings.SandboxKey;
  const container = await docker.createContainer({
    Image: FENCE_IMAGE,
    Cmd: ["python3", "-u", "-c", NETWORK_FENCE_SCRIPT],
    Env: [`FENCE_CONFIG=${JSON.stringify(config)}`],
    User: "0:0",
    Labels: { ...labels, [FENCE_LABEL]: sandboxContainerId },
    // Its own network (its upstream connections), the sandbox's bound in (its rules and listeners);
    // SYS_ADMIN for setns, NET_ADMIN for the rules; nothing of it is in the sandbox's reach.
    HostConfig: {
      NetworkMode: "bridge",
      CapDrop: ["ALL"],
      CapAdd: ["NET_ADMIN", "SYS_ADMIN"],
      Binds: [`${sandboxKey}:/run/sandbox-netns:ro`],
    },
  });
  await container.start();
  await untilFenceReady(container);
  return container.id;
}

async function untilFenceReady(container: Docker.Container): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const logs = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
    if (logs.includes("fence ready")) return;
    const state = (await container.inspect()).State;
    if (!state.Running || Date.now() > deadline) {
      await container.remove({ force: true }).catch(() => {});
      throw new Error(`the sandbox's network fence did not start: ${logs.slice(-500)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
