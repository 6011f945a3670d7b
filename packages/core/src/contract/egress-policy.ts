import { z } from "zod";

/**
 * A host pattern of an egress allowlist: a name (`example.com`, only that
 * host) or a wildcard over its subdomains (`*.github.com`: `api.github.com`,
 * `a.b.github.com`, never `github.com` itself). Lower case, no port, no
 * scheme; an IPv4 address written out matches only that address.
 */
export const egressHostPatternSchema = z
  .string()
  .max(253)
  .regex(
    /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/,
    'a lower-case host name, or "*." and one (example.com, *.github.com)',
  );

/** An IPv4 or IPv6 address range in CIDR form (`10.20.0.0/16`, `fd12::/64`). */
const cidrSchema = z.string().regex(/^[0-9a-fA-F:.]{2,39}\/\d{1,3}$/, "an address range in CIDR form (10.20.0.0/16)");

/**
 * Where a computer's network traffic may go (issue 53, "Egress by
 * policy"; docs/architecture.md §9). Enforced outside the computer by an
 * egress proxy (`@agent-computer/egress`), on the address a name resolves
 * to, so a name cannot be pointed at a private address after it was
 * allowed. A provider without `capabilities.egress` refuses a spec that
 * carries one (`UNSUPPORTED`) rather than run the computer unfenced.
 */
export const egressPolicySchema = z.object({
  /** Named in every refusal (the 403's body, the denial event), so a person knows which rule said no. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, "1 to 64 letters, digits, . _ -")
    .default("default"),
  /**
   * The hosts the computer may reach, by pattern. Absent: any host whose
   * address is public. Present (even empty): only these, and still only at
   * public addresses.
   */
  allow: z.array(egressHostPatternSchema).max(1000).optional(),
  /**
   * Private ranges the operator lets through on purpose (an internal API, a
   * test fixture): by default every private, loopback, link-local, CGNAT
   * and unique-local address is refused, and the cloud metadata addresses
   * are refused whatever this says.
   */
  allowPrivate: z.array(cidrSchema).max(100).default([]),
});

export type EgressPolicy = z.input<typeof egressPolicySchema>;
export type ResolvedEgressPolicy = z.output<typeof egressPolicySchema>;
