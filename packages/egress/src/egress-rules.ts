import { lookup } from "node:dns/promises";
import { type EgressPolicy, egressPolicySchema, parseInput } from "@agent-computer/core";
import { AddressRules, parseAddress } from "@agent-computer/core/provider-utils";
import type { EgressRefusalReason } from "./egress-refusal.js";
import { hostMatchesAny, normalizeHost } from "./host-pattern.js";

/** Gives every address a name resolves to (DNS by default; tests and embedders may pass their own). */
export type HostResolver = (host: string) => Promise<string[]>;

/** The operating system's resolver, every address of both families. */
export const systemResolver: HostResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Keeps each name's addresses for `ttlMs` (the proxy asks Docker's resolver
 * once per name, not once per request: measured, a lookup was most of the
 * added latency of a request on a new connection). A kept answer is judged
 * like a fresh one and connected to as judged, so caching opens no way
 * around the rules; a name's new addresses are seen after `ttlMs`.
 */
export function cachingResolver(resolve: HostResolver, ttlMs = 5_000, maxNames = 4_096): HostResolver {
  const kept = new Map<string, { addresses: Promise<string[]>; until: number }>();
  return (host) => {
    const now = Date.now();
    const found = kept.get(host);
    if (found && found.until > now) return found.addresses;
    if (kept.size >= maxNames) kept.clear();
    const addresses = resolve(host);
    kept.set(host, { addresses, until: now + ttlMs });
    // A failed lookup is not kept: the next request asks again.
    addresses.catch(() => kept.delete(host));
    return addresses;
  };
}

/** What the proxy does with one destination: connect to exactly `address`, or refuse for `reason`. */
export type EgressVerdict =
  | { readonly allowed: true; readonly host: string; readonly address: string }
  | {
      readonly allowed: false;
      readonly host: string;
      readonly reason: EgressRefusalReason;
      readonly address?: string;
    };

/** Where the policy's rules come from besides the policy. */
export interface EgressRulesOptions {
  /**
   * The host's own addresses (the Docker host's), refused like private
   * ones: a public address of the host would otherwise reach its services.
   */
  readonly hostAddresses?: readonly string[];
  readonly resolve?: HostResolver;
}

/**
 * One egress policy, checked and ready to judge destinations. The host
 * pattern is matched on the name the request gave; the address rules on
 * every address that name resolves to, here, once, and the proxy connects
 * to the address judged (never resolving again), so a name cannot be
 * pointed at a private address between the check and the connection (DNS
 * rebinding).
 */
export class EgressRules {
  readonly name: string;
  private readonly allow?: readonly string[];
  private readonly addresses: AddressRules;
  private readonly resolve: HostResolver;

  constructor(policy: EgressPolicy, options: EgressRulesOptions = {}) {
    const parsed = parseInput(egressPolicySchema, policy, "EgressPolicy");
    this.name = parsed.name;
    this.allow = parsed.allow;
    this.addresses = new AddressRules(parsed.allowPrivate, options.hostAddresses ?? []);
    this.resolve = options.resolve ?? systemResolver;
  }

  /** The verdict on `rawHost` (a name, an IPv4 address, or an IPv6 address with or without brackets). */
  async judge(rawHost: string): Promise<EgressVerdict> {
    const host = normalizeHost(rawHost);
    if (this.allow && !hostMatchesAny(host, this.allow)) return { allowed: false, host, reason: "not-allowed" };
    const literal = parseAddress(host);
    const candidates = literal ? [literal] : await this.resolveAll(host);
    if (candidates.length === 0) return { allowed: false, host, reason: "unresolved" };
    let refused: { reason: EgressRefusalReason; address: string } | undefined;
    for (const candidate of candidates) {
      const reason = this.addresses.refusalOf(candidate);
      const address = candidate.toString();
      if (!reason) return { allowed: true, host, address };
      refused ??= { reason, address };
    }
    return { allowed: false, host, ...(refused ?? { reason: "unresolved" }) };
  }

  private async resolveAll(host: string) {
    const found = await this.resolve(host).catch(() => []);
    return found.flatMap((text) => {
      const address = parseAddress(text);
      return address ? [address] : [];
    });
  }
}
