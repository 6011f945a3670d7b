import { createHash } from "node:crypto";
import { HttpAnswer } from "@agent-computer/testing/emulator";
import type Docker from "dockerode";
import { NETWORK_FENCE_SCRIPT } from "./network-fence-script.js";

// A sandbox's egress as the service holds it (e2b-dev/infra), and the fence
// that enforces it on the emulator's container (network-fence-script.ts).

/** What the orchestrator gets for a sandbox (infra orchestrator.proto SandboxNetworkEgressConfig). */
export interface SandboxEgress {
  allowedCidrs: string[];
  deniedCidrs: string[];
  allowedDomains: string[];
}

type Json = Record<string, unknown>;

/** sandbox-network/firewall.go AllInternetTrafficCIDR and DefaultNameserver. */
const ALL_TRAFFIC = "0.0.0.0/0";
const DEFAULT_NAMESERVER = "8.8.8.8";

/** sandbox-network/firewall.go DeniedSandboxCIDRs, IPv4 part (the orchestrator's nftables sets are IPv4). */
export const ALWAYS_DENIED_CIDRS = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** sandbox-network IsIPOrCIDR (Go net.ParseIP / ParseCIDR), IPv4 written out; IPv6 text also counts as an address. */
function isIpOrCidr(text: string): boolean {
  const [address = "", bits, extra] = text.split("/");
  if (extra !== undefined) return false;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return false;
  const v4 = IPV4.exec(address);
  if (v4) return v4.slice(1).every((octet) => Number(octet) <= 255) && (bits === undefined || Number(bits) <= 32);
  return address.includes(":") && /^[0-9a-fA-F:.]+$/.test(address) && (bits === undefined || Number(bits) <= 128);
}

/** sandbox-network IsSpecifiedIPOrCIDR: an address or CIDR whose address is not 0.0.0.0 / ::, but 0.0.0.0/0 itself. */
function isSpecifiedIpOrCidr(text: string): boolean {
  if (!isIpOrCidr(text)) return false;
  if (text === ALL_TRAFFIC) return true;
  const address = text.split("/")[0] as string;
  return address !== "0.0.0.0" && !/^[0:]+$/.test(address);
}

const badRequest = (message: string) => new HttpAnswer(400, { code: 400, message });

/**
 * handlers/sandbox_create.go's checks of `network` (validateNetworkConfig,
 * validateEgressRules, and the flags that keep `rules` and `egressProxy`
 * from a team without them, answered as for such a team: the emulator
 * models neither), then create_instance.go buildNetworkConfig and
 * buildEgressConfig: the egress the orchestrator gets, or undefined for none.
 */
export function sandboxEgressOf(body: Json): SandboxEgress | undefined {
  const network = body.network as Json | undefined;
  const allowOut = (network?.allowOut ?? []) as string[];
  const denyOut = (network?.denyOut ?? []) as string[];
  for (const cidr of denyOut) if (!isSpecifiedIpOrCidr(cidr)) throw badRequest(`invalid denied CIDR ${cidr}`);
  const addresses = allowOut.filter(isIpOrCidr);
  const domains = allowOut.filter((entry) => !isIpOrCidr(entry));
  for (const address of addresses)
    if (!isSpecifiedIpOrCidr(address)) throw badRequest(`invalid allowed address ${address}`);
  if (domains.length > 0 && !denyOut.includes(ALL_TRAFFIC))
    throw badRequest(
      "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out to block all other traffic.",
    );
  if (network?.rules !== undefined && network.rules !== null)
    throw badRequest("Network transform rules are not available for your team.");
  if (network?.egressProxy) throw badRequest("Egress proxy (network.egressProxy) is not enabled for this team.");
  const closed = body.allow_internet_access === false;
  if (!network?.allowOut && !network?.denyOut && !closed) return undefined;
  // buildEgressConfig: the default nameserver joins the allowed addresses when a domain is allowed;
  // AddressStringsToCIDRs gives a bare address its /32.
  const cidr = (entry: string) => (entry.includes("/") ? entry : `${entry}/32`);
  return {
    allowedCidrs: [...addresses, ...(domains.length > 0 ? [DEFAULT_NAMESERVER] : [])].map(cidr),
    // buildNetworkConfig: allow_internet_access false replaces the denied list with all traffic.
    deniedCidrs: closed ? [ALL_TRAFFIC] : denyOut.map(cidr),
    allowedDomains: domains,
  };
}

/** Where the fence is told what stands in for the internet in a test. */
export interface FenceSettings {
  /** Addresses the emulator treats as public, though on a private Docker network: the tests' fixture hosts. */
  publicStandIns: string[];
  /** Names the fence (the orchestrator's resolver) resolves, standing in for public DNS. */
  hosts: Record<string, string>;
}

/** The fence's image: Debian's iptables and Python 3, made once per engine from the base image. */
const FENCE_BASE = "debian:bookworm-slim";
const FENCE_PACKAGES = ["iptables", "python3"];
const FENCE_IMAGE = `agent-computer-test/e2b-network-fence:${createHash("sha256")
  .update(`${FENCE_BASE} ${FENCE_PACKAGES.join(" ")}`)
  .digest("hex")
  .slice(0, 12)}`;
export const FENCE_LABEL = "agent-computer.e2b-network-fence";

const imageMade = new WeakMap<Docker, Promise<void>>();

/** Makes the fence image when the engine lacks it: apt in a container of the base image, committed. */
export function ensureFenceImage(docker: Docker): Promise<void> {
  let made = imageMade.get(docker);
  if (!made) {
    made = (async () => {
      if (
        await docker
          .getImage(FENCE_IMAGE)
          .inspect()
          .then(
            () => true,
            () => false,
          )
      )
        return;
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
    })();
    made.catch(() => imageMade.delete(docker));
    imageMade.set(docker, made);
  }
  return made;
}

/**
 * Starts the fence of one sandbox: a container of its own on the bridge,
 * with the sandbox container's network namespace bound in, running the
 * fence program (network-fence-script.ts); resolves
 * once its rules are in and its listeners up. Gives the fence's container id.
 */
export async function startFence(
  docker: Docker,
  sandboxContainerId: string,
  egress: SandboxEgress,
  settings: FenceSettings,
  labels: Record<string, string>,
): Promise<string> {
  await ensureFenceImage(docker);
  const config = {
    ...egress,
    alwaysDenied: ALWAYS_DENIED_CIDRS,
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
  const deadline = Date.now() + 20_000;
  for (;;) {
    const logs = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
    if (logs.includes("fence ready")) return container.id;
    const state = (await container.inspect()).State;
    if (!state.Running || Date.now() > deadline) {
      await container.remove({ force: true }).catch(() => {});
      throw new Error(`the sandbox's network fence did not start: ${logs.slice(-500)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
