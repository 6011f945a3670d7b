import { egressPolicySchema } from "@agent-computer/core";
import { AddressRules, parseAddress } from "@agent-computer/core/provider-utils";
import { describe, expect, it } from "vitest";
import { e2bNetworkOf, parseIpv4Range } from "./e2b-network.js";

const networkOf = (policy: object) => e2bNetworkOf(egressPolicySchema.parse(policy), "E2B");

describe("e2bNetworkOf", () => {
  it("sends nothing without a policy, and an allowlist as allowOut with every other destination denied", () => {
    expect(e2bNetworkOf(undefined, "E2B")).toBeUndefined();
    expect(networkOf({ allow: ["example.com", "*.github.com", "203.0.113.7"] })).toEqual({
      allowOut: ["example.com", "*.github.com", "203.0.113.7"],
      denyOut: ["0.0.0.0/0"],
    });
    expect(networkOf({ allow: [] })).toEqual({ allowOut: [], denyOut: ["0.0.0.0/0"] });
  });

  it("denies the private and reserved ranges by name when any public host may be reached", () => {
    const network = networkOf({});
    expect(network?.allowOut).toEqual([]);
    expect(network?.denyOut).toEqual(
      expect.arrayContaining(["10.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "198.18.0.0/15"]),
    );
    expect(network?.denyOut).not.toContain("0.0.0.0/0");
  });

  it("denies by name every IPv4 address core's rules refuse, when any public host may be reached", () => {
    // One address in each /8, and the first and last of each smaller range core's rules (ipaddr.js) set apart.
    const samples = [
      ...Array.from({ length: 256 }, (_, first) => `${first}.1.2.3`),
      ...["100.64.0.1", "100.127.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.254", "192.0.0.1"],
      ...["192.0.2.1", "192.88.99.1", "192.168.0.1", "198.18.0.1", "198.19.255.254", "198.51.100.1", "203.0.113.1"],
      "255.255.255.255",
    ];
    const core = new AddressRules([], []);
    const denied = (networkOf({})?.denyOut ?? []).map((cidr) => parseIpv4Range(cidr) as [number, number]);
    const covered = (text: string) => {
      const [address] = parseIpv4Range(text) as [number, number];
      return denied.some(([first, last]) => first <= address && address <= last);
    };
    const refusedByCore = samples.filter((text) => core.refusalOf(parseAddress(text) as never) !== undefined);
    expect(refusedByCore.length).toBeGreaterThan(20);
    // 0.0.0.0/8 cannot be named (the API refuses an unspecified address); in the sandbox it is the sandbox itself.
    expect(refusedByCore.filter((text) => !text.startsWith("0.") && !covered(text))).toEqual([]);
  });

  it("lets through an allowPrivate range the service does not always drop, and refuses one it does, or IPv6", () => {
    expect(networkOf({ allow: ["example.com"], allowPrivate: ["198.18.0.0/16"] })?.allowOut).toEqual([
      "198.18.0.0/16",
      "example.com",
    ]);
    for (const range of ["10.1.0.0/16", "172.0.0.0/8", "169.254.169.254/32"])
      expect(() => networkOf({ allowPrivate: [range] })).toThrow(expect.objectContaining({ code: "UNSUPPORTED" }));
    expect(() => networkOf({ allowPrivate: ["fd12::/64"] })).toThrow(/IPv4 only/);
  });

  it("refuses credentials without naming their value", () => {
    const policy = { credentials: [{ host: "api.example.com", basic: { username: "u", password: "hunter2-secret" } }] };
    expect(() => networkOf(policy)).toThrow(expect.objectContaining({ code: "UNSUPPORTED" }));
    expect(() => networkOf(policy)).not.toThrow(/hunter2/);
  });
});
