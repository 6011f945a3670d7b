/** Why the egress proxy refused a request: stable codes an app can branch on, each with a sentence for people. */
export type EgressRefusalReason =
  | "not-allowed" // the host matches no pattern of the allowlist
  | "private-address" // it resolves to a private, loopback, link-local, CGNAT, unique-local or other non-public address
  | "metadata-address" // it resolves to a cloud metadata address (169.254.169.254, fd00:ec2::254)
  | "host-address" // it resolves to an address of the Docker host
  | "unresolved" // its name has no address
  | "no-policy" // the proxy holds no policy for the network the request came from
  | "bad-request"; // not a proxy request (no absolute URL, no host:port, a scheme other than http)

export const REFUSAL_TEXT: Record<EgressRefusalReason, string> = {
  "not-allowed": "is not on the allowlist",
  "private-address": "resolves only to private or other non-public addresses",
  "metadata-address": "resolves to a cloud metadata address",
  "host-address": "resolves to an address of the host",
  unresolved: "has no address",
  "no-policy": "comes from a network no policy is held for",
  "bad-request": "is not a request a forward proxy takes",
};

/** One refused request, as the proxy reports it (to `onDenied`, or one JSON line on stdout in a container). */
export interface EgressDenial {
  /** The policy's `name`. */
  readonly policy: string;
  /** The host as the request named it (a name or an address). */
  readonly host: string;
  readonly port: number;
  readonly reason: EgressRefusalReason;
  /** The address the refusal was about, where one was resolved. */
  readonly address?: string;
  /** The computer the policy belongs to, where the proxy serves several (provider-docker's shared proxy). */
  readonly computerId?: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}
