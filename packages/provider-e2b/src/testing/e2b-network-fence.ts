import { type FenceRules, HttpAnswer } from "@agent-computer/testing/emulator";

// A sandbox's egress as the service holds it (e2b-dev/infra); the kit's
// fence enforces it on the emulator's container (@agent-computer/testing's
// emulator/network-fence.ts, whose rules are the orchestrator's).

/** What the orchestrator gets for a sandbox (infra orchestrator.proto SandboxNetworkEgressConfig). */
export type SandboxEgress = Omit<FenceRules, "alwaysDenied">;

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
