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

/** A header field name (RFC 9110 §5.1 token), lower-cased by the proxy. */
const headerNameSchema = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/, "a header name (authorization, x-api-key)");

/** A secret's text: never echoed, so its errors name the rule, never the value. */
const secretTextSchema = (max: number) =>
  z
    .string()
    .min(1, "must not be empty")
    .max(max, `at most ${max} characters`)
    .regex(/^[^\r\n\0]*$/, "no line breaks or NUL");

/**
 * A credential the egress proxy adds to the computer's requests to one
 * host (issue 53, "Credentials added on the way out"): the header itself
 * (`{ name: "authorization", value: "Bearer ..." }`), or basic auth. The
 * value stays outside the computer: plain HTTP gets it when the proxy
 * forwards; HTTPS to this host is terminated by the proxy with the
 * computer's own CA and sent on with it (`@agent-computer/egress` README).
 * The proxy replaces a header of the same name the program sent.
 */
export const egressCredentialSchema = z
  .object({
    /** One host name exactly (no wildcard: the proxy holds a certificate for each). */
    host: egressHostPatternSchema.refine((host) => !host.startsWith("*."), "one host name, no wildcard"),
    header: z
      .object({ name: headerNameSchema, value: secretTextSchema(8192) })
      .strict()
      .optional(),
    basic: z
      .object({
        username: secretTextSchema(256).refine((name) => !name.includes(":"), "no colon"),
        password: secretTextSchema(4096),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine(
    (credential) => (credential.header ? 1 : 0) + (credential.basic ? 1 : 0) === 1,
    "exactly one of header, basic",
  );

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
  /**
   * Credentials the proxy adds on the way out, one host each (a host at
   * most once). Still only where `allow` and the address rules let the
   * request through.
   */
  credentials: z
    .array(egressCredentialSchema)
    .max(100)
    .default([])
    .refine((list) => new Set(list.map((entry) => entry.host)).size === list.length, "a host at most once"),
});

export type EgressPolicy = z.input<typeof egressPolicySchema>;
export type ResolvedEgressPolicy = z.output<typeof egressPolicySchema>;
export type EgressCredential = z.input<typeof egressCredentialSchema>;

/** Why an egress fence refused a request: stable codes an app can branch on (`@agent-computer/egress` has a sentence for each). */
export type EgressRefusalReason =
  | "not-allowed" // the host matches no pattern of the allowlist
  | "private-address" // it resolves to a private, loopback, link-local, CGNAT, unique-local or other non-public address
  | "metadata-address" // it resolves to a cloud metadata address (169.254.169.254, fd00:ec2::254)
  | "host-address" // it resolves to an address of the host the fence runs on
  | "unresolved" // its name has no address
  | "no-policy" // the fence holds no policy for where the request came from
  | "bad-request"; // not a request the fence takes (no absolute URL, no host:port, a scheme other than http)

/**
 * One request an egress fence refused, as a provider reports it
 * (`SandboxProvider.watchEgressDenials`): no header, path or body of the
 * request, so nothing the bot sent can carry a secret into it.
 */
export interface EgressDenial {
  /** The policy's `name`. */
  readonly policy: string;
  /** The host as the request named it (a name or an address). */
  readonly host: string;
  readonly port: number;
  readonly reason: EgressRefusalReason;
  /** The address the refusal was about, where one was resolved. */
  readonly address?: string;
  /** The computer the policy belongs to, where the fence serves several (provider-docker's shared proxy). */
  readonly computerId?: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}
