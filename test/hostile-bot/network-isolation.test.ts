import type { Machine } from "@agent-computer/core";
import {
  checkDockerHost,
  dockerProvider,
  ISOLATED_BRIDGE_INTERFACE,
  ISOLATED_NETWORK,
} from "@agent-computer/provider-docker";
import { chooseTestProvider, temporaryDataDir } from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";

// Issue 21 #3: a bot on computer B tries every way onto computer A, its
// screen gateway (6080) and a server A's bot runs (8000), by A's address on
// the network and by the network's host end. On the provider's default
// network none connects; on Docker's shared "bridge" (the default before
// this fix) the same probe reaches A, which shows the probe can tell.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: network isolation",
);

/** Prints one word per target: "open", or the error that stopped the connection. */
const PROBE = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        print("open")
    except OSError as e:
        print(type(e).__name__)
    finally:
        s.close()
`;

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString();

if (!env.missing) {
  describe("hostile bot: network isolation", () => {
    const owned: Machine[] = [];
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    });

    const addressesOf = async (m: Machine) => {
      const info = await env.docker.getContainer(m.ref.slice("docker:".length)).inspect();
      const [name, net] = Object.entries(info.NetworkSettings.Networks)[0] as [string, Docker.NetworkInfo];
      return { network: name, ip: net.IPAddress, gateway: net.Gateway };
    };

    /** A and B on one network; A's bot serves on 8000 and A's gateway runs; B probes A. */
    const probeFromSecondComputer = async (network?: string) => {
      const dataDir = await temporaryDataDir();
      // The shared display (displayContainer: false), where this defence is what holds: with the
      // default display container the bot's container has no gateway, relay or X server at all
      // (docker-display-container.test.ts).
      const provider = env.provider({ dataDir, displayContainer: false, ...(network ? { network } : {}) });
      const stamp = `${Date.now().toString(36)}-${network ?? "default"}`;
      const a = await provider.provision({ computerId: `net-a-${stamp}`, homeKey: `net-a-${stamp}` });
      owned.push(a);
      const b = await provider.provision({ computerId: `net-b-${stamp}`, homeKey: `net-b-${stamp}` });
      owned.push(b);
      void a.exec({ shell: "exec python3 -m http.server 8000 --bind 0.0.0.0", timeoutMs: 120_000 }).catch(() => {});
      const desktop = await a.openDesktop!("net-bot");
      const aAt = await addressesOf(a);
      const bAt = await addressesOf(b);
      // A itself serves: the listeners are up before B looks.
      const own = await a.exec({ argv: ["python3", "-c", PROBE, "127.0.0.1:8000", `${aAt.ip}:6080`] });
      expect(text(own.stdout).split("\n").slice(0, 2)).toEqual(["open", "open"]);
      const fromB = await b.exec({
        argv: ["python3", "-c", PROBE, `${aAt.ip}:8000`, `${aAt.ip}:6080`, `${bAt.gateway}:6080`],
        timeoutMs: 30_000,
      });
      await desktop.release();
      return { aAt, bAt, answers: text(fromB.stdout).trim().split("\n") };
    };

    it("on the default network, a second computer reaches neither A's server nor A's gateway", async () => {
      const { aAt, bAt, answers } = await probeFromSecondComputer();
      expect(aAt.network).toBe(ISOLATED_NETWORK);
      expect(bAt.network).toBe(ISOLATED_NETWORK);
      expect(answers).toHaveLength(3);
      for (const answer of answers) expect(answer).not.toBe("open");
      const network = await env.docker.getNetwork(ISOLATED_NETWORK).inspect();
      expect(network.Options?.["com.docker.network.bridge.enable_icc"]).toBe("false");
      // Named on the host, for the operator's rule that keeps computers from the host (provider README).
      expect(network.Options?.["com.docker.network.bridge.name"]).toBe(ISOLATED_BRIDGE_INTERFACE);
    }, 180_000);

    it("on Docker's shared bridge the same probe reaches A (the probe can tell)", async () => {
      const { aAt, answers } = await probeFromSecondComputer("bridge");
      expect(aAt.network).toBe("bridge");
      expect(answers.slice(0, 2)).toEqual(["open", "open"]);
    }, 180_000);
  });
}
