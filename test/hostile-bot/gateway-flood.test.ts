import type { Machine, ScreenEndpoint } from "@agent-computer/core";
import { checkDockerHost, dockerProvider } from "@agent-computer/provider-docker";
import { chooseTestProvider, RfbTestClient, temporaryDataDir } from "@agent-computer/testing/provider-test";
import { afterAll, describe, expect, it } from "vitest";

// Another computer on the same Docker network floods this computer's screen
// gateway with half-open upgrade requests and tries to reach it at all. The
// gateway takes connections only from the host's end of the network and
// caps what may wait for an upgrade, so a person's viewer stays connected.
// The provider's default network keeps computers apart altogether
// (network-isolation.test.ts); this runs on Docker's shared "bridge", as an
// operator's own network may be, to show the gateway holds by itself.
const env = await chooseTestProvider(
  { kind: "docker", check: checkDockerHost, create: dockerProvider },
  "hostile bot: gateway flood",
);

const FLOOD = `
import socket, sys, time
target, count = sys.argv[1], int(sys.argv[2])
held, refused = [], 0
for i in range(count):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((target, 6080))
        s.send(b"GET /screens/x HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\n")
        held.append(s)
    except OSError:
        refused += 1
time.sleep(1)
alive = 0
for s in held:
    try:
        s.send(b"X-Slow: 1\\r\\n")
        alive += 1
    except OSError:
        pass
print(len(held), refused, alive)
sys.stdout.flush()
time.sleep(float(sys.argv[3]))
`;

if (!env.missing) {
  describe("hostile bot: gateway flood", () => {
    const owned: Machine[] = [];
    afterAll(async () => {
      for (const m of owned) await m.destroy().catch(() => {});
    });

    it("a second computer's flood leaves the first one's viewer connected and gets no connection itself", async () => {
      const dataDir = await temporaryDataDir();
      // The shared display (displayContainer: false), where this defence is what holds: with the
      // default display container the bot's container has no gateway, relay or X server at all
      // (docker-display-container.test.ts).
      const provider = env.provider({ dataDir, network: "bridge", displayContainer: false });
      const stamp = Date.now().toString(36);
      const victim = await provider.provision({ computerId: `victim-${stamp}`, homeKey: `victim-${stamp}` });
      owned.push(victim);
      const attacker = await provider.provision({ computerId: `attacker-${stamp}`, homeKey: `attacker-${stamp}` });
      owned.push(attacker);
      const desktop = await victim.openDesktop!("viewer-bot");
      const info = await env.docker.getContainer(victim.ref.slice("docker:".length)).inspect();
      const victimIp = Object.values(info.NetworkSettings.Networks)[0]?.IPAddress;
      expect(victimIp).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

      const flood = attacker.exec({
        argv: ["python3", "-c", FLOOD, victimIp as string, "2000", "8"],
        timeoutMs: 120_000,
      });
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const endpoint: ScreenEndpoint = await desktop.screenEndpoint("view");
      const client = await RfbTestClient.open(endpoint);
      const init = await client.handshake();
      expect(init.width).toBeGreaterThan(0);
      expect(await client.requestUpdate()).toBe(0);
      client.close();
      const [held, refused, alive] = Buffer.from((await flood).stdout)
        .toString()
        .trim()
        .split(" ")
        .map(Number);
      // Every connection of the other computer was closed at accept: none stayed open to wait on.
      expect(held! + refused!).toBe(2000);
      expect(alive).toBe(0);
      await desktop.release();
    }, 180_000);
  });
}
