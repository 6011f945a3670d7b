import type { EgressDenial, EgressRefusalReason } from "@agent-computer/core";

// The refusal codes and the denial's shape are the contract's (core's
// egress-policy.ts), so every provider's fence reports alike.
export type { EgressDenial, EgressRefusalReason };

export const REFUSAL_TEXT: Record<EgressRefusalReason, string> = {
  "not-allowed": "is not on the allowlist",
  "private-address": "resolves only to private or other non-public addresses",
  "metadata-address": "resolves to a cloud metadata address",
  "host-address": "resolves to an address of the host",
  unresolved: "has no address",
  "no-policy": "comes from a network no policy is held for",
  "bad-request": "is not a request a forward proxy takes",
};
