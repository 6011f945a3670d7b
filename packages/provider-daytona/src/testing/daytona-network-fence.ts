import { isIPv4 } from "node:net";
import { type FenceRules, HttpAnswer } from "@agent-computer/testing/emulator";

// A sandbox's egress as Daytona holds it; the kit's fence enforces it on the
// emulator's container (@agent-computer/testing's emulator/network-fence.ts).
// Sources at daytonaio/daytona b5a5d9e78 (v0.190.0, the last open tree):
// apps/api/src/sandbox/utils/network-validation.util.ts (the API's checks,
// answered 400 by sandbox.service.ts resolveNetworkAllowList and
// resolveDomainAllowList, l.3312-3330), apps/runner/pkg/docker/create.go
// l.242-256 and apps/runner/pkg/netrules/set.go (the runner's rules).

type Json = Record<string, unknown>;

/** The settings a sandbox keeps (sandbox.entity.ts l.129-135), as the API reports them back. */
export interface SandboxNetworkSettings {
  networkBlockAll: boolean;
  networkAllowList?: string;
  domainAllowList?: string;
}

const badRequest = (message: string) => new HttpAnswer(400, message);

/** network-validation.util.ts validateNetworkAllowList (l.12-38), its messages as they are. */
function validateNetworkAllowList(list: string): void {
  const networks = list.split(",").map((network) => network.trim());
  for (const network of networks) {
    if (!network) continue;
    const [ipAddress = "", prefixLength] = network.split("/");
    if (!isIPv4(ipAddress))
      throw badRequest(`Invalid IP address: "${ipAddress}" in network "${network}". Must be a valid IPv4 address`);
    if (!prefixLength) throw badRequest(`Invalid network format: "${network}". Missing CIDR prefix length (e.g., /24)`);
    // parseInt as the API does: "/abc" is NaN and passes (the runner then refuses it, below).
    const prefix = Number.parseInt(prefixLength, 10);
    if (prefix < 0 || prefix > 32)
      throw badRequest(`Invalid CIDR prefix length: ${network}. Prefix must be between 0 and 32`);
  }
  // Counted after the split, empty entries included (l.35).
  if (networks.length > 10) throw badRequest("Network allow list cannot contain more than 10 networks");
}

/** network-validation.util.ts validateDomainAllowList (l.45-62). */
function validateDomainAllowList(list: string): void {
  const domains = list.split(",").map((domain) => domain.trim());
  const domainRegex = /^(\*\.)?([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,}$/;
  for (const domain of domains) {
    if (!domain) continue;
    if (!domainRegex.test(domain)) throw badRequest(`Invalid domain: "${domain}". Must be a valid domain name`);
  }
  if (domains.length > 10) throw badRequest("Domain allow list cannot contain more than 10 domains");
}

/**
 * The create body's network fields as the API takes them (sandbox.service.ts
 * l.651-661: networkBlockAll kept, each list validated): the settings the
 * sandbox keeps, or the API's 400. A field of the wrong type is the DTO's
 * 400 (create-sandbox.dto.ts l.81-103, @IsBoolean / @IsString; the recorder
 * also records it as a violation of the definition).
 */
export function networkSettingsOf(body: Json): SandboxNetworkSettings {
  const { networkBlockAll, networkAllowList, domainAllowList } = body;
  if (networkBlockAll !== undefined && typeof networkBlockAll !== "boolean")
    throw badRequest("networkBlockAll must be a boolean value");
  for (const [name, value] of [
    ["networkAllowList", networkAllowList],
    ["domainAllowList", domainAllowList],
  ] as const)
    if (value !== undefined && typeof value !== "string") throw badRequest(`${name} must be a string`);
  if (typeof networkAllowList === "string") validateNetworkAllowList(networkAllowList);
  if (typeof domainAllowList === "string") validateDomainAllowList(domainAllowList);
  return {
    networkBlockAll: networkBlockAll === true,
    ...(typeof networkAllowList === "string" ? { networkAllowList } : {}),
    ...(typeof domainAllowList === "string" ? { domainAllowList } : {}),
  };
}

/** Go's net.ParseCIDR for IPv4, as utils.go parseCidrNetworks uses it: the address, then 0-32 in decimal. */
function isGoCidr(entry: string): boolean {
  const [address = "", bits, extra] = entry.split("/");
  return extra === undefined && isIPv4(address) && bits !== undefined && /^\d{1,2}$/.test(bits) && Number(bits) <= 32;
}

const entriesOf = (list: string | undefined) =>
  (list ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);

/**
 * What the runner puts in force for a sandbox's settings, as the kit's
 * fence rules, or undefined for none (the sandbox reaches every address).
 * Where the fence's order is not the runner's, said beside the mapping.
 */
export function fenceRulesOf(settings: SandboxNetworkSettings): FenceRules | undefined {
  const cidrs = entriesOf(settings.networkAllowList);
  const domains = entriesOf(settings.domainAllowList);
  // The runner's chain has no ranges of its own that it always drops (set.go: the list, then DROP); the
  // cloud metadata address and private ranges are reachable when a CIDR lets them through.
  const rules = (allowedCidrs: string[], allowedDomains: string[]): FenceRules => ({
    alwaysDenied: [],
    allowedCidrs,
    // set.go l.40-43: a final DROP, every protocol.
    deniedCidrs: ["0.0.0.0/0"],
    allowedDomains,
  });
  // create.go l.242-248: networkBlockAll wins (SetNetworkRules with an empty list: DROP only; the docs'
  // network-limits.mdx l.182 say so too). With a domain list as well: not published; blocked here too.
  if (settings.networkBlockAll) return rules([], []);
  // create.go l.249-255 and set.go l.33-38: each CIDR a RETURN for every protocol, from the sandbox's address,
  // hooked into DOCKER-USER. The runner parses them with Go's net.ParseCIDR (utils.go l.28): one it refuses
  // (the API lets "/abc" through) fails SetNetworkRules, which is only logged, and no rule goes in.
  if (cidrs.length > 0 && !cidrs.every(isGoCidr)) return domains.length > 0 ? rules([], domains) : undefined;
  if (domains.length === 0) return cidrs.length > 0 ? rules(cidrs, []) : undefined;
  // The domain list goes to the runner with the start (sandbox-start.action.ts l.559-561, metadata
  // "domainAllowList"), whose published code does not read it: its enforcement is not in the open tree.
  // Published: names on the list are reached, everything else is blocked, `example.com` the apex,
  // `*.example.com` its subdomains (examples/typescript/domain-allow-list/index.ts l.17-20), web ports 80/443
  // are redirected at the network layer (@daytona/api-client 0.218.0 create-sandbox.d.ts l.57). The fence holds
  // that: names by Host and SNI on 80/443, dialled by the fence; any other port and protocol dropped; a
  // subdomain at any depth (the depth Daytona matches is not published). How it combines with a CIDR list is
  // not published either: here either lets a connection through.
  return rules(cidrs, domains);
}
