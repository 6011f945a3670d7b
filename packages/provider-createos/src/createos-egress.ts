import { AgentComputerError, type ResolvedEgressPolicy } from "@agent-computer/core";
import { AddressRules, parseAddress } from "@agent-computer/core/provider-utils";

// How a core EgressPolicy becomes CreateOS's own egress allowlist (issue 53):
// `egress` of POST /v1/sandboxes (@nodeops-createos/sandbox 0.7.1
// dist/types.d.ts CreateSandboxRequest.egress, l.173-174), enforced by the
// service "in-kernel on the host" outside the VM (the service's REST page
// Sandbox/REST-API/Egress). What is and is not published about each form is
// in the README's "Egress" section; where it is not, the mapping is the
// strictest one that holds whatever the service does.

/**
 * The ports a name or address of `allow` is opened on, each as its own
 * `host:port` rule (REST Egress page: "host:port — Allow only that port";
 * the SDK's own example, sandbox.d.ts setEgress, is `api.openai.com:443`):
 * HTTPS and HTTP, the traffic core's policy is about (the Docker provider's
 * proxy carries HTTP and CONNECT); a bare `host` would open every port and
 * protocol to it.
 */
export const CREATEOS_EGRESS_PORTS: readonly number[] = [443, 80];

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The service's allow rules for a policy, or undefined for none (the
 * service's default: everything out). Refuses (UNSUPPORTED), before any
 * request, what the service cannot hold or what it would hold wider than
 * the policy says.
 */
export function createosEgressOf(policy: ResolvedEgressPolicy | undefined): string[] | undefined {
  if (!policy) return undefined;
  const refuse = (what: string) =>
    new AgentComputerError("UNSUPPORTED", `The egress policy "${policy.name}" asks CreateOS for ${what}.`);
  if (policy.credentials.length > 0) {
    throw refuse(
      "credentials added on the way out: the service publishes no such setting, and no egress proxy of ours runs there",
    );
  }
  if (policy.allow === undefined) {
    // REST Egress page: an empty list, null or ["*"] lets all outbound traffic out ("no iptables chain
    // installed"), and "there is no denylist token": private ranges, metadata and the host cannot be taken out.
    throw refuse(
      "any public host: the service's only open setting lets every destination out, private and metadata addresses included, and it has no deny rule to take them out (give `allow`)",
    );
  }
  // Core's own address rules (the Docker provider's proxy judges by them): a written-out address that is
  // not public is left out unless allowPrivate covers it, and the metadata address always.
  const addresses = new AddressRules(policy.allowPrivate, []);
  const rules: string[] = [];
  for (const pattern of policy.allow) {
    if (pattern.startsWith("*.")) {
      // REST Egress page: "*.host — Wildcard subdomain match"; whether it matches the name itself, at
      // what depth, and how an in-kernel rule matches a name pattern at all is not published.
      throw refuse(
        `${pattern}: how the service matches a wildcard (the name itself too, or not) is not published, so it could let more through than the policy says`,
      );
    }
    const address = IPV4.test(pattern) ? parseAddress(pattern) : undefined;
    if (address && addresses.refusalOf(address) !== undefined) continue;
    for (const port of CREATEOS_EGRESS_PORTS) rules.push(`${pattern}:${port}`);
  }
  if (rules.length === 0) {
    // An empty list is "allow all" to the service (types.d.ts l.173): nothing cannot be said.
    throw refuse("no destination at all: the service reads an empty allowlist as everything allowed");
  }
  return rules;
}

/**
 * Whether an allowlist the service answered (CreateSandboxResponse.egress,
 * "Resolved egress allowlist", types.d.ts l.215-216; EgressView.egress)
 * holds rules: an empty one or `*` is everything allowed (REST Egress page).
 */
export function egressIsClosed(answered: readonly string[] | undefined): boolean {
  return answered !== undefined && answered.length > 0 && !answered.includes("*");
}
