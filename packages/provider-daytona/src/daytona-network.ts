import { AgentComputerError, type ResolvedEgressPolicy } from "@agent-computer/core";
import { AddressRules, parseAddress } from "@agent-computer/core/provider-utils";

// How a core EgressPolicy becomes Daytona's own network controls (issue 53):
// the create body's networkBlockAll, networkAllowList and domainAllowList
// (@daytona/api-client 0.218.0 src/models/create-sandbox.d.ts l.44-55; the
// SDK sends them as given, @daytonaio/sdk 0.218.0 cjs/Daytona.js l.385-387).
// Sources of each rule, at daytonaio/daytona b5a5d9e78 (v0.190.0, the last
// open tree): apps/api/src/sandbox/utils/network-validation.util.ts (the
// API's checks), apps/runner/pkg/netrules/set.go (how the runner enforces
// a CIDR list). What holds and what is not published: README "Egress".

/** network-validation.util.ts l.35 and l.59: at most 10 entries in either list. */
export const MAX_LIST_ENTRIES = 10;

/**
 * network-validation.util.ts validateDomainAllowList l.49: host labels, at
 * least two, the last letters only; one leading `*.` at most.
 */
const DAYTONA_DOMAIN = /^(\*\.)?([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,}$/;

const IPV4_LITERAL = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** The create body's network fields, as CreateSandbox names them. */
export interface DaytonaEgressFields {
  networkBlockAll?: boolean;
  networkAllowList?: string;
  domainAllowList?: string;
}

/**
 * The create fields for a policy, or undefined for none. Refuses
 * (UNSUPPORTED), before any request, what Daytona cannot hold.
 */
export function daytonaNetworkOf(policy: ResolvedEgressPolicy | undefined): DaytonaEgressFields | undefined {
  if (!policy) return undefined;
  const refuse = (what: string) =>
    new AgentComputerError("UNSUPPORTED", `The egress policy "${policy.name}" asks Daytona for ${what}.`);
  if (policy.credentials.length > 0)
    throw refuse("credentials added on the way out: the service has no such setting (README, Egress)");
  if (policy.allow === undefined)
    // Any public host, never a private one: the service's controls are allow lists only (no deny list), and a
    // sandbox with none set reaches every address (the runner installs its chain only for networkBlockAll or a
    // networkAllowList: apps/runner/pkg/docker/create.go l.242-256); ten CIDRs cannot cover the public space.
    throw refuse(
      "any public host but no private one: Daytona publishes allow lists only, and without one its sandboxes reach private addresses too",
    );
  const names = policy.allow.filter((pattern) => !IPV4_LITERAL.test(pattern));
  const addresses = policy.allow.filter((pattern) => IPV4_LITERAL.test(pattern));
  if (names.length > 0 && addresses.length > 0)
    // set.go l.33-43 drops everything a CIDR list leaves out; how the domain list (enforced outside the published
    // tree) combines with it is not published.
    throw refuse(
      `names and addresses at once (${names[0]}, ${addresses[0]}): how its domain and CIDR lists combine is not published`,
    );
  if (names.length > 0) {
    const inexpressible = names.find((name) => !DAYTONA_DOMAIN.test(name));
    if (inexpressible)
      throw refuse(
        `${inexpressible}, which its domain list cannot hold (two labels or more, a top-level label of letters: network-validation.util.ts l.49)`,
      );
    if (names.length > MAX_LIST_ENTRIES)
      throw refuse(`${names.length} names: its domain list holds at most ${MAX_LIST_ENTRIES}`);
    return { domainAllowList: names.join(",") };
  }
  // An address is reachable under core's rules only where they let it through (a private one only inside
  // allowPrivate); the service's CIDR list has no ranges of its own that it always drops (set.go: RETURN for
  // each, then DROP), so an address core would refuse is left out rather than opened.
  const rules = new AddressRules(policy.allowPrivate, []);
  const reachable = addresses.filter((text) => {
    const address = parseAddress(text);
    return address !== undefined && rules.refusalOf(address) === undefined;
  });
  if (reachable.length === 0) return { networkBlockAll: true };
  if (reachable.length > MAX_LIST_ENTRIES)
    throw refuse(`${reachable.length} addresses: its CIDR list holds at most ${MAX_LIST_ENTRIES}`);
  // validateNetworkAllowList l.24-26: every entry needs its prefix length.
  return { networkAllowList: reachable.map((address) => `${address}/32`).join(",") };
}
