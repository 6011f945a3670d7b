import { describe, expect, it } from "vitest";
import type { Machine } from "../contract/machine.js";
import type { ProviderCapabilities } from "../contract/provider-capabilities.js";
import { defineSandboxProvider } from "./define-sandbox-provider.js";

const capabilities: ProviderCapabilities = {
  desktop: false,
  multiScreen: false,
  pageBrowser: false,
  terminal: false,
  billsWhileRunning: false,
  stopKeepsMachine: true,
  mountedHome: false,
};

function providerWith(egress: boolean | undefined) {
  const provisioned: unknown[] = [];
  const provider = defineSandboxProvider({
    kind: "sketch",
    capabilities: { ...capabilities, ...(egress === undefined ? {} : { egress }) },
    defaults: { image: "img", screenLimit: 0 },
    defaultImage: async () => "img",
    machineId: (id) => id,
    provision: async (request) => {
      provisioned.push(request.spec.egress);
      return {} as Machine;
    },
    reconnect: async () => "gone",
    list: async () => [],
  });
  return { provider, provisioned };
}

describe("defineSandboxProvider and egress policies", () => {
  it("refuses a spec with a policy on a provider that does not enforce one, before provisioning", async () => {
    for (const egress of [undefined, false]) {
      const { provider, provisioned } = providerWith(egress);
      await expect(
        provider.provision({ computerId: "c", homeKey: "h", egress: { allow: ["example.com"] } }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED" });
      expect(provisioned).toEqual([]);
    }
  });

  it("hands a provider with capabilities.egress the checked policy, defaults filled in", async () => {
    const { provider, provisioned } = providerWith(true);
    await provider.provision({ computerId: "c", homeKey: "h", egress: { allow: ["*.github.com"] } });
    expect(provisioned).toEqual([{ name: "default", allow: ["*.github.com"], allowPrivate: [], credentials: [] }]);
  });

  it("refuses a bad policy as INVALID_ARGUMENT naming the field", async () => {
    const { provider } = providerWith(true);
    await expect(
      provider.provision({ computerId: "c", homeKey: "h", egress: { allow: ["https://x.com"] } }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("egress") });
  });
});
