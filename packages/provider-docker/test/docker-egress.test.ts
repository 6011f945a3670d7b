import type { Machine } from "@agent-computer/core";
import type { LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import type { EgressDenial } from "@agent-computer/egress";
import {
  bypassScript,
  displayBrowserReach,
  FIXTURE_REPLY,
  fixtureHost,
  hostSideTarget,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ISOLATED_NETWORK } from "../src/computer-network.js";
import { egressProxyName } from "../src/egress-proxy-container.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// Egress by policy on the real engine (issue 53; README, "Egress by policy").
// The stand-ins for the internet: fixture hosts on networks of their own,
// which the test (the operator here) joins the provider's egress proxy to,
// so Docker's resolver gives their names to the proxy; their subnet counts
// as "public" through the policy's explicit `allowPrivate`, as an operator
// would name an internal API; no rule changes for anyone else. A server on
// this host, which a computer on the bridge reaches at the bridge's gateway,
// is what the bot aims at when it tries to get around the proxy.
const env = await dockerTestEnvironment("docker egress");
if (!env.missing) {
  const run = Math.random().toString(36).slice(2, 8);
  const denials: EgressDenial[] = [];
  let provider: ReturnType<typeof env.provider>;
  let fenced: Machine;
  let publicOnly: Machine;
  let allowed: Awaited<ReturnType<typeof fixtureHost>>;
  let rebind: Awaited<ReturnType<typeof fixtureHost>>;
  let host: Awaited<ReturnType<typeof hostSideTarget>>;
  let gateway = "";
  let dataDir = "";

  const sh = async (machine: Machine, script: string) => {
    const result = await machine.exec({ argv: ["sh", "-c", script] });
    return {
      exitCode: result.exitCode,
      out: Buffer.from(result.stdout).toString(),
      err: Buffer.from(result.stderr).toString(),
    };
  };

  beforeAll(async () => {
    dataDir = await temporaryDataDir();
    const image = await computerImageRef();
    allowed = await fixtureHost(env.docker, image, `ac-egress-${run}-allowed`, "10.215", [
      "allowed.example.test",
      "other.example.test",
    ]);
    rebind = await fixtureHost(env.docker, image, `ac-egress-${run}-rebind`, "10.216", ["rebind.example.test"]);
    host = await hostSideTarget();
    provider = env.provider({ dataDir, onEgressDenied: (denial) => denials.push(denial) });
    fenced = await provider.provision({
      computerId: "fenced",
      homeKey: `egress-fenced-${run}`,
      egress: {
        name: "fixture-allowlist",
        allow: ["allowed.example.test", "rebind.example.test"],
        allowPrivate: [allowed.subnet],
      },
    });
    publicOnly = await provider.provision({
      computerId: "public-only",
      homeKey: `egress-public-${run}`,
      egress: { name: "public-only", allowPrivate: [allowed.subnet] },
    });
    // The operator's step of this test: the proxy reaches the fixture hosts' networks.
    for (const network of [allowed.network, rebind.network]) {
      await env.docker.getNetwork(network).connect({ Container: egressProxyName(dataDir) });
    }
    const bridge = await env.docker.getNetwork(ISOLATED_NETWORK).inspect();
    gateway = bridge.IPAM?.Config?.[0]?.Gateway ?? "";
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  }, 180_000);

  afterAll(async () => {
    await fenced?.destroy().catch(() => {});
    await publicOnly?.destroy().catch(() => {});
    await env.docker
      .getContainer(egressProxyName(dataDir))
      .remove({ force: true })
      .catch(() => {});
    await allowed?.remove();
    await rebind?.remove();
    await host?.close();
  }, 60_000);

  describe("docker egress by policy", () => {
    it("lets the bot's curl reach an allowed host through the proxy, plain and tunnelled", async () => {
      const plain = await sh(fenced, "curl -sS --max-time 10 http://allowed.example.test:8080/");
      expect(plain.out, plain.err).toBe(FIXTURE_REPLY);
      const tunnelled = await sh(fenced, "curl -sS --max-time 10 --proxytunnel http://allowed.example.test:8080/");
      expect(tunnelled.out, tunnelled.err).toBe(FIXTURE_REPLY);
    });

    it("refuses another host with a 403 naming the policy and the host, plain and through CONNECT", async () => {
      const plain = await sh(fenced, "curl -sS --max-time 10 -w '\\n%{http_code}' http://other.example.test:8080/");
      expect(plain.out).toMatch(/\n403$/);
      expect(plain.out).toContain('Refused by the egress policy "fixture-allowlist": other.example.test');
      const tunnel = await sh(
        fenced,
        "curl -sS --max-time 10 -o /dev/null -w '%{http_connect}' https://other.example.test/",
      );
      expect(tunnel.out).toBe("403");
    });

    it("refuses a private address and the metadata address, though the policy allows every public host", async () => {
      const reachable = await sh(publicOnly, "curl -sS --max-time 10 http://allowed.example.test:8080/");
      expect(reachable.out, reachable.err).toBe(FIXTURE_REPLY);
      const privateHost = await sh(publicOnly, `curl -sS --max-time 10 -i http://${rebind.address}:8080/`);
      expect(privateHost.out).toMatch(/^HTTP\/1\.1 403/);
      expect(privateHost.out).toContain("x-agent-computer-egress: private-address");
      expect(privateHost.out).toContain('"public-only"');
      const theHost = await sh(publicOnly, `curl -sS --max-time 10 -i http://${gateway}:${host.httpPort}/`);
      expect(theHost.out).toMatch(/^HTTP\/1\.1 403/);
      const metadata = await sh(publicOnly, "curl -sS --max-time 10 -i http://169.254.169.254/latest/meta-data/");
      expect(metadata.out).toContain("x-agent-computer-egress: metadata-address");
      expect(host.arrived.http).toBe(0);
    });

    it("refuses an allowed name that resolves to a private address (the DNS trick)", async () => {
      const trick = await sh(fenced, "curl -sS --max-time 10 -i http://rebind.example.test:8080/");
      expect(trick.out).toMatch(/^HTTP\/1\.1 403/);
      expect(trick.out).toContain("x-agent-computer-egress: private-address");
      expect(trick.out).toContain("rebind.example.test");
    });

    it("gives nothing to a bot that unsets the proxy variables or aims at an address directly", async () => {
      const unset = await sh(
        fenced,
        `env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy curl -sS --max-time 3 http://${gateway}:${host.httpPort}/`,
      );
      expect(unset.exitCode).not.toBe(0);
      const direct = await sh(fenced, `curl -sS --noproxy '*' --max-time 3 http://${allowed.address}:8080/`);
      expect(direct.exitCode).not.toBe(0);
      expect(direct.out).not.toContain(FIXTURE_REPLY);
      const byName = await sh(fenced, "curl -sS --noproxy '*' --max-time 3 http://allowed.example.test:8080/");
      expect(byName.exitCode).not.toBe(0);
      expect(host.arrived.http).toBe(0);
    });

    it("cannot change its routes, open a raw socket, or send UDP or ICMP around the proxy", async () => {
      const proxyAddress = (await sh(fenced, "getent hosts egress-proxy")).out.split(/\s+/)[0] ?? "";
      expect(proxyAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const tried = await sh(fenced, `python3 -c '${bypassScript(gateway, host.udpPort, proxyAddress)}'`);
      const outcome = JSON.parse(tried.out) as Record<string, string>;
      expect(outcome.raw).toMatch(/^PermissionError/);
      expect(outcome.route).toMatch(/^PermissionError/);
      expect(outcome.icmp).not.toBe("reply");
      // After the route attempt, still no way to the host.
      const after = await sh(fenced, `curl -sS --noproxy '*' --max-time 3 http://${gateway}:${host.httpPort}/`);
      expect(after.exitCode).not.toBe(0);
      await new Promise((done) => setTimeout(done, 500));
      expect(host.arrived).toEqual({ http: 0, udp: 0 });
    });

    it("reports each refusal to the app with the computer, the host, the port and the reason", async () => {
      await sh(fenced, "curl -sS --max-time 10 http://other.example.test:8080/reported");
      await expect
        .poll(() => denials.filter((d) => d.computerId === "fenced" && d.host === "other.example.test"), {
          timeout: 10_000,
        })
        .toContainEqual(expect.objectContaining({ policy: "fixture-allowlist", port: 8080, reason: "not-allowed" }));
      expect(denials).toContainEqual(
        expect.objectContaining({ computerId: "public-only", reason: "metadata-address", host: "169.254.169.254" }),
      );
    });

    it("refuses a policy with a shared display, which would put the bot beside a browser on the bridge", async () => {
      const shared = env.provider({ dataDir, displayContainer: false });
      await expect(
        shared.provision({ computerId: "shared", homeKey: `egress-shared-${run}`, egress: {} }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED" });
    });

    it("gives the display's browser the web only through the proxy, the bot's localhost pages still, and no WebRTC UDP", async () => {
      const desktop = (await fenced.openDesktop?.("browser-bot")) as LinuxDesktopSession;
      const reached = await displayBrowserReach({ sh: (script) => sh(fenced, script), desktop, gateway, host });
      expect(reached).toEqual({
        allowed: FIXTURE_REPLY,
        other: expect.stringContaining('Refused by the egress policy "fixture-allowlist": other.example.test'),
        loopback: "bot-local-page",
        hostPage: expect.stringContaining("Refused by the egress policy"),
      });
      expect(host.arrived).toEqual({ http: 0, udp: 0 });
      // The display's container forwards no name to the host's resolvers (its browser resolves nothing itself).
      const labels = (await env.docker.getContainer(fenced.ref.slice("docker:".length)).inspect()).Config.Labels ?? {};
      const display = await env.docker.getContainer(labels["agent-computer.org/display-container"] ?? "").inspect();
      expect(display.HostConfig.Dns).toEqual(["127.0.0.1"]);
      // An image application given a URL would fetch it from the display's container, around the proxy.
      await expect(desktop.launch?.(["display", `http://${gateway}:${host.httpPort}/`])).rejects.toMatchObject({
        code: "UNSUPPORTED",
      });
      await new Promise((done) => setTimeout(done, 1000));
      expect(host.arrived.http).toBe(0);
      await desktop.release();
    }, 180_000);

    it("keeps the fence through stop and reconnect: same network, same policy, for the bot and its browser", async () => {
      await fenced.stop();
      const again = await provider.reconnect(fenced.ref);
      if (again === "gone") throw new Error("the fenced computer was not found again");
      fenced = again;
      const allowedAgain = await sh(fenced, "curl -sS --max-time 10 http://allowed.example.test:8080/");
      expect(allowedAgain.out, allowedAgain.err).toBe(FIXTURE_REPLY);
      const refused = await sh(fenced, "curl -sS --max-time 10 http://other.example.test:8080/");
      expect(refused.out).toContain('"fixture-allowlist"');
      const direct = await sh(fenced, `curl -sS --noproxy '*' --max-time 3 http://${gateway}:${host.httpPort}/`);
      expect(direct.exitCode).not.toBe(0);
      const desktop = (await fenced.openDesktop?.("bot-2")) as LinuxDesktopSession;
      expect(
        await desktop.evaluateInPage("document.body.innerText", undefined, { url: "http://other.example.test:8080/" }),
      ).toContain("Refused by the egress policy");
      await desktop.release();
    });
  });
}
