import { lookup } from "node:dns/promises";
import type { FenceRules } from "@agent-computer/testing/emulator";
import { refuse } from "./createos-vms.js";

// A sandbox's egress allowlist as the service holds it, put in force by the
// kit's fence (@agent-computer/testing's emulator/network-fence.ts) on the
// emulator's container, outside the VM's reach, as the service enforces it
// "in-kernel on the host" ("cannot be bypassed from inside the VM"). What
// the service publishes (its REST page Sandbox/REST-API/Egress, "Rule
// formats"; @nodeops-createos/sandbox 0.7.1 types.d.ts; the SDK repository's
// examples/49-egress-locked-agent-worker/README.md) is cited beside each
// part; the emulator's own choices, where nothing is published, say so.

/** One rule of the REST page's table: `*`, `*.host`, `host`, `ip`, `cidr`, each but the first two optionally `:port`. */
export type EgressRule =
  | { kind: "all" }
  | { kind: "wildcard"; pattern: string }
  | { kind: "name"; name: string; port?: number }
  | { kind: "cidr"; cidr: string; port?: number };

const NAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/;

/** A rule of the table, or undefined for a malformed one (sandbox.js setEgress: ValidationError "when a rule is malformed"). */
export function parseEgressRule(text: string): EgressRule | undefined {
  if (text === "*") return { kind: "all" };
  if (text.startsWith("*.")) {
    // The table's `*.host` has no `:port` form: the emulator refuses one.
    return NAME.test(text.slice(2)) ? { kind: "wildcard", pattern: text.toLowerCase() } : undefined;
  }
  const colon = text.lastIndexOf(":");
  const target = colon < 0 ? text : text.slice(0, colon);
  let port: number | undefined;
  if (colon >= 0) {
    port = /^\d{1,5}$/.test(text.slice(colon + 1)) ? Number(text.slice(colon + 1)) : 0;
    if (port < 1 || port > 65_535) return undefined;
  }
  const v4 = IPV4.exec(target);
  if (v4) {
    const octetsOk = v4.slice(1, 5).every((octet) => Number(octet) <= 255);
    if (!octetsOk || (v4[5] !== undefined && Number(v4[5]) > 32)) return undefined;
    return { kind: "cidr", cidr: v4[5] === undefined ? `${target}/32` : target, ...(port ? { port } : {}) };
  }
  // A name: at least one dot or a single label; an address of another family is not in the table.
  if (!NAME.test(target) || /^[\d.]+$/.test(target)) return undefined;
  return { kind: "name", name: target.toLowerCase(), ...(port ? { port } : {}) };
}

/** Parses a request's list, or throws the 400 the SDK maps to CreateosSandboxValidationError (errors.js). */
export function checkedEgress(list: readonly string[] | null | undefined): string[] {
  const rules = [...(list ?? [])];
  for (const rule of rules)
    if (!parseEgressRule(rule)) throw refuse(400, `invalid egress rule ${JSON.stringify(rule)}`);
  return rules;
}

/** REST page: "Empty list / null / ["*"] — all outbound traffic is allowed (no iptables chain installed)". */
export function egressIsOpen(rules: readonly string[]): boolean {
  return rules.length === 0 || rules.includes("*");
}

/**
 * The fence's rules for a sandbox's allowlist ("Once you set any rules, only
 * the listed destinations pass — everything else is dropped in-kernel"), or
 * undefined when it is open. `hosts` stands in for public DNS (the test's
 * names); `nameservers` are the VM's own resolvers.
 */
export async function fenceRulesOf(
  rules: readonly string[],
  hosts: Record<string, string>,
  nameservers: readonly string[],
): Promise<FenceRules | undefined> {
  if (egressIsOpen(rules)) return undefined;
  const allowedCidrs: string[] = [];
  const allowedCidrPorts: { cidr: string; port: number }[] = [];
  const allowedDomains: string[] = [];
  const allow = (cidr: string, port: number | undefined) =>
    port === undefined ? allowedCidrs.push(cidr) : allowedCidrPorts.push({ cidr, port });
  for (const text of rules) {
    const rule = parseEgressRule(text) as EgressRule;
    if (rule.kind === "cidr") allow(rule.cidr, rule.port);
    else if (rule.kind === "wildcard") {
      // Not published how a name pattern is matched in-kernel. The emulator's choice: by the name a
      // connection carries (HTTP Host on 80, TLS SNI on 443; the kit's fence), subdomains at any depth,
      // never the name itself.
      allowedDomains.push(rule.pattern);
    } else if (rule.kind === "name") {
      // Not published when or how a name is turned into addresses. The emulator's choice, as an
      // iptables chain ("flushed and rebuilt in a single update") can only hold addresses: the name is
      // resolved when the rules are put in, and its addresses let through, on the rule's port or all.
      for (const address of await addressesOf(rule.name, hosts)) allow(`${address}/32`, rule.port);
    }
  }
  // Example 49's README: "DNS still resolves under the lock — only the connection is filtered". The
  // emulator's choice: the VM's own resolvers on port 53 (a resolver on loopback is never fenced).
  for (const nameserver of nameservers) allow(`${nameserver}/32`, 53);
  // The service publishes no range it always drops: everything not listed is dropped, nothing listed is.
  return { alwaysDenied: [], allowedCidrs, allowedCidrPorts, deniedCidrs: ["0.0.0.0/0"], allowedDomains };
}

async function addressesOf(name: string, hosts: Record<string, string>): Promise<string[]> {
  const known = hosts[name];
  if (known) return [known];
  const found = await lookup(name, { all: true, family: 4 }).catch(() => []);
  return found.map((entry) => entry.address);
}

/** The IPv4 resolvers of a resolv.conf, but loopback ones (those answer inside the VM). */
export function nameserversOf(resolvConf: string): string[] {
  return [...resolvConf.matchAll(/^\s*nameserver\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$/gm)]
    .map((match) => match[1] as string)
    .filter((address) => !address.startsWith("127."));
}
