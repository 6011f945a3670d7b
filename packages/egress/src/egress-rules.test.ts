import type { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { cachingResolver, EgressRules } from "./egress-rules.js";

const resolverOf =
  (table: Record<string, string[]>) =>
  async (host: string): Promise<string[]> =>
    table[host] ?? [];

describe("EgressRules", () => {
  it("lets a public address through and refuses every non-public range and the metadata addresses", async () => {
    const rules = new EgressRules({});
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"]) {
      expect(await rules.judge(address)).toEqual({ allowed: true, host: address, address });
    }
    const refused: Record<string, string> = {
      "10.1.2.3": "private-address",
      "172.17.0.1": "private-address",
      "192.168.1.1": "private-address",
      "127.0.0.1": "private-address",
      "100.64.0.1": "private-address",
      "169.254.10.1": "private-address",
      "0.0.0.0": "private-address",
      "::1": "private-address",
      "fe80::1": "private-address",
      "fd12::1": "private-address",
      "[::ffff:10.0.0.1]": "private-address",
      "169.254.169.254": "metadata-address",
      "fd00:ec2::254": "metadata-address",
    };
    for (const [host, reason] of Object.entries(refused)) {
      expect(await rules.judge(host), host).toMatchObject({ allowed: false, reason });
    }
  });

  it("matches host patterns on the name: exact names and subdomains of a wildcard, not its apex", async () => {
    const rules = new EgressRules(
      { name: "gh", allow: ["example.com", "*.github.com"] },
      { resolve: async () => ["93.184.216.34"] },
    );
    for (const host of ["example.com", "EXAMPLE.com.", "api.github.com", "a.b.github.com"]) {
      expect(await rules.judge(host), host).toMatchObject({ allowed: true });
    }
    for (const host of ["github.com", "www.example.com", "evilgithub.com", "example.com.evil.net"]) {
      expect(await rules.judge(host), host).toMatchObject({ allowed: false, reason: "not-allowed" });
    }
  });

  it("judges the resolved addresses: an allowed name pointing at a private address is refused (no rebinding)", async () => {
    const rules = new EgressRules(
      { allow: ["*.example.test"] },
      {
        resolve: resolverOf({
          "rebind.example.test": ["10.0.0.7"],
          "mixed.example.test": ["10.0.0.7", "93.184.216.34"],
          "gone.example.test": [],
        }),
      },
    );
    expect(await rules.judge("rebind.example.test")).toEqual({
      allowed: false,
      host: "rebind.example.test",
      reason: "private-address",
      address: "10.0.0.7",
    });
    expect(await rules.judge("mixed.example.test")).toMatchObject({ allowed: true, address: "93.184.216.34" });
    expect(await rules.judge("gone.example.test")).toMatchObject({ allowed: false, reason: "unresolved" });
  });

  it("lets named private ranges and refuses the host's addresses", async () => {
    const rules = new EgressRules({ allowPrivate: ["10.215.7.0/24"] }, { hostAddresses: ["203.0.113.9"] });
    expect(await rules.judge("10.215.7.2")).toMatchObject({ allowed: true });
    expect(await rules.judge("10.215.8.2")).toMatchObject({ allowed: false, reason: "private-address" });
    expect(await rules.judge("203.0.113.9")).toMatchObject({ allowed: false, reason: "host-address" });
  });

  it("refuses a policy that would let the metadata address through, or a bad pattern, as INVALID_ARGUMENT", () => {
    for (const policy of [
      { allowPrivate: ["169.254.0.0/16"] },
      { allowPrivate: ["fd00::/8"] },
      { allowPrivate: ["10.0.0.0/33"] },
      { allow: ["https://example.com"] },
      { allow: ["*example.com"] },
    ]) {
      expect(() => new EgressRules(policy), JSON.stringify(policy)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }) as unknown as AgentComputerError,
      );
    }
  });

  it("asks the resolver once per name within the cache time, and judges a kept answer like a fresh one", async () => {
    let asked = 0;
    let answer = ["93.184.216.34"];
    const resolve = cachingResolver(async () => {
      asked++;
      return answer;
    }, 60_000);
    const rules = new EgressRules({ allow: ["a.example.test"] }, { resolve });
    expect(await rules.judge("a.example.test")).toMatchObject({ allowed: true });
    answer = ["10.0.0.1"];
    expect(await rules.judge("a.example.test")).toMatchObject({ allowed: true, address: "93.184.216.34" });
    expect(asked).toBe(1);
    const fresh = new EgressRules(
      { allow: ["a.example.test"] },
      { resolve: cachingResolver(async () => ["10.0.0.1"]) },
    );
    expect(await fresh.judge("a.example.test")).toMatchObject({ allowed: false, reason: "private-address" });
  });
});
