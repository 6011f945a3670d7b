import { randomBytes } from "node:crypto";
import { failureOf } from "@agent-computer/testing/provider-test";
import Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { createdOrder, ensureIsolatedNetwork } from "../src/computer-network.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The isolated network on the real engine, under a name of this test's own
// (the provider's "agent-computer" is shared with suites running beside it).
const env = await dockerTestEnvironment("docker computer network");

if (!env.missing) {
  const docker = new Docker();
  const made: string[] = [];
  const fresh = () => {
    const suffix = randomBytes(4).toString("hex");
    made.push(`agent-computer-test-${suffix}`);
    // The network and its host interface (at most 15 characters).
    return [`agent-computer-test-${suffix}`, `act-${suffix}`] as const;
  };
  afterAll(async () => {
    for (const name of made)
      await docker
        .getNetwork(name)
        .remove()
        .catch(() => {});
  });

  describe("docker computer network", () => {
    it("orders the engine's creation times, whose fractions have their trailing zeros cut", () => {
      const times = [
        "2026-12-02T03:11:17.12Z",
        "2026-12-02T03:11:17.119Z",
        "2026-12-02T03:11:17Z",
        "2026-12-02T04:11:17.5+01:00",
      ];
      expect([...times].sort((a, b) => createdOrder(a).localeCompare(createdOrder(b)))).toEqual([
        "2026-12-02T03:11:17Z",
        "2026-12-02T03:11:17.119Z",
        "2026-12-02T03:11:17.12Z",
        "2026-12-02T04:11:17.5+01:00",
      ]);
    });

    it("makes the bridge with inter-container traffic off, once, when three workers ask at once", async () => {
      const [name, bridge] = fresh();
      const ids = await Promise.all([0, 1, 2].map(() => ensureIsolatedNetwork(docker, name, bridge)));
      // Both callers name the one network that is left.
      expect(new Set(ids).size).toBe(1);
      const networks = await docker.listNetworks({ filters: JSON.stringify({ name: [name] }) });
      expect(networks.filter((n) => n.Name === name).map((n) => n.Id)).toEqual([ids[0]]);
      const info = await docker.getNetwork(name).inspect();
      expect(info.Driver).toBe("bridge");
      expect(info.Options?.["com.docker.network.bridge.enable_icc"]).toBe("false");
      expect(info.Options?.["com.docker.network.bridge.name"]).toBe(bridge);
      // A second call finds it and leaves it.
      expect(await ensureIsolatedNetwork(docker, name, bridge)).toBe(info.Id);
    });

    it("refuses a network of that name on which containers reach each other, naming the fix", async () => {
      const [name, bridge] = fresh();
      await docker.createNetwork({ Name: name, Driver: "bridge" });
      const error = await failureOf(ensureIsolatedNetwork(docker, name, bridge));
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(`docker network rm ${name}`);
    });
  });
}
