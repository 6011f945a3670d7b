import { connect } from "node:net";
import type { Machine } from "@agent-computer/core";
import { computerImageRef, type LinuxDesktopSession } from "@agent-computer/desktop-runtime";
import type { EgressDenial } from "@agent-computer/egress";
import {
  bypassScript,
  displayBrowserReach,
  FIXTURE_REPLY,
  fixtureHost,
  hostSideTarget,
} from "@agent-computer/testing/provider-test";
import { CoreV1Api, type V1Container, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EGRESS_CONTAINER_NAME, EGRESS_FENCE_CONTAINER_NAME } from "../src/egress-fence-manifest.js";
import type { Json } from "./fixture-json.js";
import { kubernetesTestEnvironment, TEST_NAMESPACE } from "./kubernetes-test-environment.js";

// Egress by policy on Kubernetes (issue 53; README, "Egress by policy"), on
// the wire fixture whose pods are real containers sharing one network
// namespace as a pod's do. The stand-in for the internet is a fixture host
// on a network of its own, which the test (the cluster's operator here)
// attaches each pod's network namespace to, so the pod's resolver finds
// its names; its subnet counts as public only through the policies'
// `allowPrivate`, as on Docker (provider-docker's docker-egress.test.ts).
// A computer without a policy, attached the same way, is the control:
// every way around the proxy the fenced bot fails at works there.
const env = await kubernetesTestEnvironment("kubernetes egress");
if (!env.missing) {
  const { fixture, docker } = env;
  const run = Math.random().toString(36).slice(2, 8);
  const denials: EgressDenial[] = [];
  const machines: Machine[] = [];
  let provider: ReturnType<typeof env.provider>;
  let fenced: Machine;
  let publicOnly: Machine;
  let open: Machine;
  let allowed: Awaited<ReturnType<typeof fixtureHost>>;
  let host: Awaited<ReturnType<typeof hostSideTarget>>;
  let gateway = "";

  const podOf = (m: Machine) => m.ref.slice(`kubernetes:${TEST_NAMESPACE}/`.length);
  const podJson = (m: Machine) => fixture.podJson(TEST_NAMESPACE, podOf(m)) as Json;
  const sh = async (machine: Machine, script: string) => {
    const result = await machine.exec({ argv: ["sh", "-c", script] });
    return {
      exitCode: result.exitCode,
      out: Buffer.from(result.stdout).toString(),
      err: Buffer.from(result.stderr).toString(),
    };
  };
  const provision = async (computerId: string, egress?: Parameters<typeof provider.provision>[0]["egress"]) => {
    const machine = await provider.provision({ computerId, homeKey: `k8s-egress-${computerId}-${run}`, egress });
    machines.push(machine);
    // The operator's step: the pod's network reaches the fixture host, and its resolver the host's names.
    const holder = fixture.networkHolderOf(TEST_NAMESPACE, podOf(machine)) as string;
    await docker.getNetwork(allowed.network).connect({ Container: holder });
    return machine;
  };

  beforeAll(async () => {
    const image = await computerImageRef();
    allowed = await fixtureHost(docker, image, `ac-k8s-egress-${run}`, "10.218", [
      "allowed.example.test",
      "other.example.test",
    ]);
    host = await hostSideTarget();
    provider = env.provider({
      seccompLocalhostProfile: "agent-computer/chromium.json",
      onEgressDenied: (denial) => denials.push(denial),
    });
    fenced = await provision("fenced", {
      name: "fixture-allowlist",
      allow: ["allowed.example.test"],
      allowPrivate: [allowed.subnet],
    });
    publicOnly = await provision("public-only", { name: "public-only", allowPrivate: [allowed.subnet] });
    open = await provision("open");
    // The host as a pod reaches it: its first network's gateway (the engine's default bridge).
    const holder = await docker.getContainer(fixture.networkHolderOf(TEST_NAMESPACE, podOf(open)) as string).inspect();
    gateway = holder.NetworkSettings.Networks.bridge?.Gateway ?? "";
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  }, 240_000);

  afterAll(async () => {
    for (const machine of machines) await machine.destroy().catch(() => {});
    await allowed?.remove();
    await host?.close();
  }, 60_000);

  describe("kubernetes egress by policy", () => {
    it("fences the pod with an init container and an egress container as nobody; a computer without a policy is placed as before", async () => {
      const pod = podJson(fenced);
      const names = (list: Json[] | undefined) => (list ?? []).map((c) => c.name);
      expect(names(pod.spec.initContainers)).toEqual([EGRESS_FENCE_CONTAINER_NAME]);
      expect(names(pod.spec.containers)).toEqual(["computer", "display", EGRESS_CONTAINER_NAME]);
      const [fence] = pod.spec.initContainers as Json[];
      expect(fence?.securityContext.capabilities).toEqual({ drop: ["ALL"], add: ["NET_ADMIN"] });
      const proxy = (pod.spec.containers as Json[])[2];
      expect(proxy?.securityContext).toMatchObject({
        runAsUser: 65534,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      expect(pod.status.initContainerStatuses[0].state.terminated.exitCode).toBe(0);
      expect(pod.status.conditions).toContainEqual(expect.objectContaining({ type: "Initialized", status: "True" }));
      const plain = podJson(open);
      expect(plain.spec.initContainers).toBeUndefined();
      expect(names(plain.spec.containers)).toEqual(["computer", "display"]);
      expect(JSON.stringify(plain.spec)).not.toMatch(/PROXY|egress/i);
      expect(plain.metadata.annotations["agent-computer.org/egress-policy"]).toBeUndefined();
      expect(pod.metadata.annotations["agent-computer.org/egress-policy"]).toBe("fixture-allowlist");
    });

    it("serves the proxy on the pod's loopback only, never on the pod's address the cluster reaches", async () => {
      const onPodAddress = await new Promise<string>((done) => {
        const socket = connect({ host: podJson(fenced).status.podIP, port: 3128, timeout: 3_000 });
        const end = (outcome: string) => {
          socket.destroy();
          done(outcome);
        };
        socket.once("connect", () => end("connected"));
        socket.once("error", (error: NodeJS.ErrnoException) => end(error.code ?? "error"));
        socket.once("timeout", () => end("timeout"));
      });
      expect(onPodAddress).toBe("ECONNREFUSED");
      // Its own pod reaches it there on loopback (the variables say so).
      expect((await sh(fenced, "echo $HTTP_PROXY")).out.trim()).toBe("http://127.0.0.1:3128");
    });

    it("lets the bot's curl reach an allowed host through the proxy, plain and tunnelled", async () => {
      const plain = await sh(fenced, "curl -sS --max-time 10 http://allowed.example.test:8080/");
      expect(plain.out, plain.err).toBe(FIXTURE_REPLY);
      const tunnelled = await sh(fenced, "curl -sS --max-time 10 --proxytunnel http://allowed.example.test:8080/");
      expect(tunnelled.out, tunnelled.err).toBe(FIXTURE_REPLY);
    });

    it("refuses another host and a private address with the policy's 403", async () => {
      const other = await sh(fenced, "curl -sS --max-time 10 -i http://other.example.test:8080/");
      expect(other.out).toMatch(/^HTTP\/1\.1 403/);
      expect(other.out).toContain("x-agent-computer-egress: not-allowed");
      expect(other.out).toContain('Refused by the egress policy "fixture-allowlist": other.example.test');
      const tunnel = await sh(
        fenced,
        "curl -sS --max-time 10 -o /dev/null -w '%{http_connect}' https://other.example.test/",
      );
      expect(tunnel.out).toBe("403");
      const reachable = await sh(publicOnly, "curl -sS --max-time 10 http://allowed.example.test:8080/");
      expect(reachable.out, reachable.err).toBe(FIXTURE_REPLY);
      const privateHost = await sh(publicOnly, `curl -sS --max-time 10 -i http://${gateway}:${host.httpPort}/`);
      expect(privateHost.out).toMatch(/^HTTP\/1\.1 403/);
      expect(privateHost.out).toContain("x-agent-computer-egress: private-address");
      expect(privateHost.out).toContain('"public-only"');
      const metadata = await sh(publicOnly, "curl -sS --max-time 10 -i http://169.254.169.254/latest/meta-data/");
      expect(metadata.out).toContain("x-agent-computer-egress: metadata-address");
      expect(host.arrived.http).toBe(0);
    });

    it("gives nothing to a bot that unsets the proxy variables or aims at an address, where an open computer gets through", async () => {
      const direct = `curl -sS --max-time 5 http://${allowed.address}:8080/`;
      const unset = await sh(fenced, `env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy ${direct}`);
      expect(unset.exitCode).not.toBe(0);
      const noProxy = await sh(fenced, `curl -sS --noproxy '*' --max-time 5 http://${gateway}:${host.httpPort}/`);
      expect(noProxy.exitCode).not.toBe(0);
      expect(host.arrived.http).toBe(0);
      // The control: the same commands from a computer without a policy reach both.
      expect((await sh(open, direct)).out).toBe(FIXTURE_REPLY);
      expect((await sh(open, `curl -sS --max-time 5 http://${gateway}:${host.httpPort}/`)).out).toBe(FIXTURE_REPLY);
      expect(host.arrived.http).toBe(1);
      host.arrived.http = 0;
    });

    it("cannot change its routes or the rules, open a raw socket, or send UDP, DNS or ICMP around the proxy", async () => {
      const tried = await sh(fenced, `python3 -c '${bypassScript(gateway, host.udpPort, gateway)}'`);
      const outcome = JSON.parse(tried.out) as Record<string, string>;
      expect(outcome.raw).toMatch(/^PermissionError/);
      expect(outcome.route).toMatch(/^PermissionError/);
      expect(outcome.icmp).not.toBe("reply");
      const rules = await sh(fenced, "nft flush ruleset");
      expect(rules.exitCode).not.toBe(0);
      // A DNS query to a resolver outside (the host's UDP server stands in for one).
      const query = `python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001"), ("${gateway}", ${host.udpPort}))'`;
      await sh(fenced, query);
      // The display's container shares the pod's network and is fenced as well.
      const display = fixture.containerOf(TEST_NAMESPACE, podOf(fenced), "display") as string;
      const fromDisplay = await docker.getContainer(display).exec({
        Cmd: ["curl", "-sS", "--noproxy", "*", "--max-time", "5", `http://${allowed.address}:8080/`],
        User: "1000",
        AttachStdout: true,
        AttachStderr: true,
      });
      await new Promise((done) => fromDisplay.start({}, (_, stream) => stream?.on("end", done).resume()));
      expect((await fromDisplay.inspect()).ExitCode).not.toBe(0);
      await new Promise((done) => setTimeout(done, 500));
      expect(host.arrived).toEqual({ http: 0, udp: 0 });
      // The control: UDP and DNS leave a computer without a policy.
      await sh(open, query);
      await expect.poll(() => host.arrived.udp, { timeout: 5_000 }).toBeGreaterThan(0);
      host.arrived.udp = 0;
      // After all that, the fence still stands and the proxy still serves.
      expect(
        (await sh(fenced, `curl -sS --noproxy '*' --max-time 5 http://${allowed.address}:8080/`)).exitCode,
      ).not.toBe(0);
      expect((await sh(fenced, "curl -sS --max-time 10 http://allowed.example.test:8080/")).out).toBe(FIXTURE_REPLY);
    });

    it("reports each refusal to the app with the computer, the host, the port and the reason", async () => {
      // A watcher (the runtime's egress-denied events) hears what the app's option hears.
      const watched: EgressDenial[] = [];
      const unwatch = provider.watchEgressDenials?.((denial) => watched.push(denial));
      await sh(fenced, "curl -sS --max-time 10 http://other.example.test:8080/reported");
      await expect
        .poll(() => denials.filter((d) => d.computerId === "fenced" && d.host === "other.example.test"), {
          timeout: 10_000,
        })
        .toContainEqual(expect.objectContaining({ policy: "fixture-allowlist", port: 8080, reason: "not-allowed" }));
      await expect
        .poll(() => watched.filter((d) => d.computerId === "fenced" && d.host === "other.example.test"), {
          timeout: 10_000,
        })
        .toHaveLength(1);
      unwatch?.();
      expect(denials).toContainEqual(
        expect.objectContaining({ computerId: "public-only", reason: "metadata-address", host: "169.254.169.254" }),
      );
    });

    it("gives the display's browser the web only through the proxy, the bot's localhost pages still, and no launch", async () => {
      const desktop = (await fenced.openDesktop?.("browser-bot")) as LinuxDesktopSession;
      const reached = await displayBrowserReach({ sh: (script) => sh(fenced, script), desktop, gateway, host });
      expect(reached).toEqual({
        allowed: FIXTURE_REPLY,
        other: expect.stringContaining('Refused by the egress policy "fixture-allowlist": other.example.test'),
        loopback: "bot-local-page",
        hostPage: expect.stringContaining("Refused by the egress policy"),
      });
      await expect(desktop.launch?.(["display", `http://${gateway}:${host.httpPort}/`])).rejects.toMatchObject({
        code: "UNSUPPORTED",
      });
      await new Promise((done) => setTimeout(done, 1000));
      expect(host.arrived).toEqual({ http: 0, udp: 0 });
      await desktop.release();
    }, 180_000);

    it("keeps the fence for a provider that reconnects, and reports its denials from then on", async () => {
      const later: EgressDenial[] = [];
      const again = env.provider({
        seccompLocalhostProfile: "agent-computer/chromium.json",
        onEgressDenied: (denial) => later.push(denial),
      });
      const reconnected = await again.reconnect(fenced.ref);
      if (reconnected === "gone") throw new Error("the fenced pod was not found again");
      const refused = await sh(reconnected, "curl -sS --max-time 10 http://other.example.test:8080/after-reconnect");
      expect(refused.out).toContain('"fixture-allowlist"');
      await expect
        .poll(() => later.filter((d) => d.computerId === "fenced" && d.host === "other.example.test"), {
          timeout: 10_000,
        })
        .toHaveLength(1);
      const direct = await sh(reconnected, `curl -sS --noproxy '*' --max-time 5 http://${allowed.address}:8080/`);
      expect(direct.exitCode).not.toBe(0);
    });

    it("refuses what it cannot fence: a policy with the display in the bot's container", async () => {
      const shared = env.provider({ displayContainer: false });
      await expect(
        shared.provision({ computerId: "shared", homeKey: `k8s-egress-shared-${run}`, egress: {} }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED" });
    });

    it("the fixture refuses an init container with a readiness probe and a name used twice, as kube-apiserver does", async () => {
      const core = fixture.kubeConfig().makeApiClient(CoreV1Api);
      // Fields a V1Container has (readinessProbe), where kube-apiserver refuses them: V1Pod's own type for the body.
      const body = (initContainers: V1Container[]): V1Pod => ({
        metadata: { name: `k8s-egress-invalid-${run}` },
        spec: { initContainers, containers: [{ name: "main", image: "unused" }] },
      });
      const probe = { exec: { command: ["true"] } };
      await expect(
        core.createNamespacedPod({
          namespace: TEST_NAMESPACE,
          body: body([{ name: "a", image: "unused", readinessProbe: probe }]),
        }),
      ).rejects.toMatchObject({ code: 422 });
      await expect(
        core.createNamespacedPod({ namespace: TEST_NAMESPACE, body: body([{ name: "main", image: "unused" }]) }),
      ).rejects.toMatchObject({ code: 422 });
    });
  });
}
