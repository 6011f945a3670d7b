import ipaddr from "ipaddr.js";
import type { EgressRefusalReason } from "../contract/egress-policy.js";
import { AgentComputerError } from "../errors/agent-computer-error.js";

// What an egress policy lets a written-out or resolved address be (the
// contract's EgressPolicy: anything public, never a private range the
// policy did not allow, the metadata addresses or the host): judged once
// here for the egress proxy (@agent-computer/egress egress-rules.ts) and
// for hosted providers that turn a policy into their service's allowlists.

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/**
 * The cloud metadata addresses (AWS, GCP, Azure, OpenStack share the IPv4
 * one; AWS's IPv6 one): refused whatever a policy's `allowPrivate` says,
 * since they hand out the host's credentials.
 */
export const METADATA_ADDRESSES: readonly string[] = ["169.254.169.254", "fd00:ec2::254"];

/** Global unicast IPv6 (2000::/3): everything outside it is not a public address. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/** An address as one family sees it: an IPv4-mapped IPv6 address is its IPv4 address. */
export function parseAddress(text: string): Address | undefined {
  if (!ipaddr.isValid(text)) return undefined;
  return ipaddr.process(text);
}

/** What an address of a resolved host may be: the parts of a policy that are about addresses. */
export class AddressRules {
  private readonly allowed: Range[];
  private readonly hostAddresses: Set<string>;
  private readonly metadata = new Set(METADATA_ADDRESSES.map((a) => ipaddr.process(a).toNormalizedString()));

  constructor(allowPrivate: readonly string[], hostAddresses: readonly string[]) {
    this.allowed = allowPrivate.map((cidr) => this.privateRange(cidr));
    this.hostAddresses = new Set(
      hostAddresses.flatMap((text) => {
        const address = parseAddress(text);
        return address ? [address.toNormalizedString()] : [];
      }),
    );
  }

  /** Why `address` is refused, or undefined where it may be reached. */
  refusalOf(address: Address): EgressRefusalReason | undefined {
    const key = address.toNormalizedString();
    if (this.metadata.has(key)) return "metadata-address";
    if (this.allowed.some((range) => address.kind() === range[0].kind() && address.match(range))) return undefined;
    if (this.hostAddresses.has(key)) return "host-address";
    if (address.range() !== "unicast") return "private-address";
    if (address.kind() === "ipv6" && !address.match(GLOBAL_UNICAST_V6)) return "private-address";
    return undefined;
  }

  private privateRange(cidr: string): Range {
    let range: Range;
    try {
      range = ipaddr.parseCIDR(cidr);
    } catch {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid EgressPolicy: at "allowPrivate": ${cidr} is not a CIDR.`,
      );
    }
    const metadata = METADATA_ADDRESSES.find((text) => {
      const address = ipaddr.process(text);
      return address.kind() === range[0].kind() && address.match(range);
    });
    if (metadata) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `Invalid EgressPolicy: at "allowPrivate": ${cidr} holds the metadata address ${metadata}, which is never allowed.`,
      );
    }
    return range;
  }
}
