import { AgentComputerError, type ResolvedEgressPolicy } from "@agent-computer/core";

// How a core EgressPolicy becomes the service's own network controls
// (issue 53): the `network` of POST /v2/sandboxes (e2b-dev/infra
// spec/openapi.yml SandboxNetworkConfig: allowOut, denyOut), enforced by
// the orchestrator outside the sandbox's VM (infra packages/orchestrator/
// pkg/sandbox/network/firewall.go, pkg/tcpfirewall/handlers.go). What the
// service does with each entry is in the README's "Egress" section.

/**
 * Every destination (openapi.yml SandboxNetworkConfig.denyOut; the SDK's
 * ALL_TRAFFIC). A domain in allowOut is refused with 400 unless denyOut holds
 * exactly this (infra packages/api/internal/handlers/sandbox_create.go
 * validateEgressRules, ErrMsgDomainsRequireBlockAll).
 */
export const ALL_TRAFFIC = "0.0.0.0/0";

/**
 * The ranges the orchestrator drops for every sandbox before any allowOut
 * is looked at (infra packages/shared/pkg/sandbox-network/firewall.go
 * DeniedSandboxCIDRs; firewall.go installRules puts this set, rule 3, before
 * the user's allow set, rule 4; tcpfirewall/handlers.go
 * proxyWithIPVerification refuses a domain that resolves into it). The cloud
 * metadata addresses are inside (169.254.0.0/16, fc00::/7).
 */
export const SERVICE_DENIED_RANGES: readonly string[] = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];

/**
 * IPv4 ranges core's rules call not public (packages/core provider-utils/address-rules.ts:
 * ipaddr.js ranges other than unicast) that the service's own list leaves
 * open: denied by name in denyOut when the policy has no `allow`. (0.0.0.0/8
 * cannot be: the API refuses an unspecified address, sandbox-network
 * IsSpecifiedIPOrCIDR; in the sandbox it is the sandbox itself.)
 */
const RESERVED_RANGES: readonly string[] = [
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
];

/** The request's network part: allowOut and denyOut of openapi.yml SandboxNetworkConfig. */
export interface E2bEgressNetwork {
  allowOut: string[];
  denyOut: string[];
}

/**
 * The service's network config for a policy, or undefined for none (the
 * service's default: every public address). Refuses (UNSUPPORTED) what the
 * service cannot hold: credentials, a private range it always drops, IPv6.
 */
export function e2bNetworkOf(policy: ResolvedEgressPolicy | undefined, service: string): E2bEgressNetwork | undefined {
  if (!policy) return undefined;
  const refuse = (what: string) =>
    new AgentComputerError("UNSUPPORTED", `The egress policy "${policy.name}" asks ${service} for ${what}.`);
  if (policy.credentials.length > 0) {
    // The service's own header rules (openapi.yml SandboxNetworkRule transform.headers) are behind a
    // per-team flag (sandbox_create.go validateNetworkRules) and not wired here: README "Egress".
    throw refuse(
      "credentials added on the way out, which this provider does not hold (no egress proxy of ours runs there)",
    );
  }
  const allowOut: string[] = [];
  for (const cidr of policy.allowPrivate) {
    const range = parseIpv4Range(cidr);
    if (!range)
      throw refuse(
        `${cidr} in allowPrivate: the service's allow and deny lists are IPv4 only (sandbox-network AddressStringToCIDR)`,
      );
    const dropped = SERVICE_DENIED_RANGES.find((denied) => overlaps(range, parseIpv4Range(denied) as Ipv4Range));
    if (dropped)
      throw refuse(
        `${cidr} in allowPrivate, which overlaps ${dropped}: the service drops that range for every sandbox whatever allowOut says`,
      );
    allowOut.push(cidr);
  }
  if (policy.allow === undefined) {
    // Any public host: the service's default, with every non-public range denied by name (the service's
    // own list again, so a compatible service that lacks it, Novita's, is told; README "Egress").
    return { allowOut, denyOut: [...SERVICE_DENIED_RANGES, ...RESERVED_RANGES] };
  }
  // Names and `*.` wildcards as published (openapi.yml SandboxNetworkConfig.allowOut: "example.com",
  // "*.example.com"; tcpfirewall/handlers.go matchDomain: subdomains at any depth, never the apex, as
  // core's patterns), and an IPv4 address as that address ("a bare IP address"; a private one stays
  // dropped by the service, as core's rules refuse it without allowPrivate).
  allowOut.push(...policy.allow);
  return { allowOut, denyOut: [ALL_TRAFFIC] };
}

type Ipv4Range = [first: number, last: number];

/** An IPv4 address or CIDR as its first and last address, or undefined for anything else. */
export function parseIpv4Range(text: string): Ipv4Range | undefined {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/.exec(text);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  const bits = match[5] === undefined ? 32 : Number(match[5]);
  if (octets.some((octet) => octet > 255) || bits > 32) return undefined;
  const address = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const size = 2 ** (32 - bits);
  const first = address - (address % size);
  return [first, first + size - 1];
}

function overlaps(a: Ipv4Range, b: Ipv4Range): boolean {
  return a[0] <= b[1] && b[0] <= a[1];
}
