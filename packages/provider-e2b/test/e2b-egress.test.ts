import { randomBytes } from "node:crypto";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { ensureFenceImage, ServiceRecorder } from "@agent-computer/testing/emulator";
import {
  bridgeFixtureTrio,
  type EgressFixtureTrio,
  reportMissingProvider,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2bProvider, novitaProvider } from "../src/index.js";
import { E2B_OPERATIONS, E2bEmulator } from "../src/testing/index.js";
import { runAsSandboxRoot } from "./e2b-test-environment.js";

// Egress by policy on E2B (issue 53; README "Egress"): the real `e2b` SDK
// (and Novita's `novita-sandbox`) against the emulator, whose sandboxes are
// real containers fenced from outside as the service's orchestrator fences
// its VMs (src/testing/e2b-network-fence.ts). The internet's stand-ins:
// fixture hosts on Docker's bridge, beside the sandboxes, answering HTTP on
// 80 and HTTPS on 443 with their own name. Two count as public through the
// emulator's `publicStandIns` (the service denies every private range
// whatever allowOut says, so a policy's allowPrivate cannot stand them in);
// the third stays what it is, a private address. Names resolve through the
// emulator's `publicHosts`, standing in for public DNS.

const host = await checkDockerHost();
if (host.missing) {
  reportMissingProvider("e2b egress", { kind: "docker", missing: host.missing });
} else {
  const run = randomBytes(3).toString("hex");
  let fixtures: EgressFixtureTrio | undefined;
  let allowed = "";
  let other = "";
  let internal = "";
  let emulator: E2bEmulator;
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;

  beforeAll(async () => {
    // Made before any create asks for it: the first time, apt takes longer than one request may.
    await ensureFenceImage(host.docker);
    fixtures = await bridgeFixtureTrio(host.docker, host.image, `ac-e2b-egress-${run}`, {
      label: "agent-computer.test/e2b-egress",
    });
    ({ allowed, other, internal } = fixtures);
    emulator = new E2bEmulator({
      docker: host.docker,
      apiKey,
      templates: { computer: host.image },
      publicStandIns: [`${allowed}/32`, `${other}/32`],
      publicHosts: { "allowed.test": allowed, "a.wild.test": allowed, "other.test": other, "internal.test": internal },
    });
    await emulator.start();
  }, 300_000);

  afterAll(async () => {
    try {
      emulator?.recorder.assertNoViolations();
    } finally {
      await emulator?.close();
      await fixtures?.remove();
    }
  }, 120_000);

  const POLICY = { name: "fixtures", allow: ["allowed.test", "*.wild.test", "internal.test"] };

  describe.each(["e2b", "novita"] as const)("egress by policy on %s", (flavour) => {
    let provider: SandboxProvider;
    let machine: Machine;
    const sh = async (script: string) => {
      const result = await machine.exec({ argv: ["sh", "-c", script] });
      return { exitCode: result.exitCode, out: Buffer.from(result.stdout).toString().trim() };
    };
    /** A command as the sandbox's root (envd's `user: "root"`, as E2B gives it), through the real SDK. */
    const asRoot = (script: string) => runAsSandboxRoot(emulator, apiKey, machine, script);
    /** What a GET answers (the fixture's reply), or "refused" when nothing came back. */
    const fetchFrom = async (url: string, extra = "") => {
      const { exitCode, out } = await sh(`curl -sk --connect-timeout 2 --max-time 5 ${extra} ${url}`);
      return exitCode === 0 ? out : "refused";
    };

    beforeAll(async () => {
      const make = flavour === "novita" ? novitaProvider : e2bProvider;
      provider = make(
        {
          apiKey,
          template: "computer",
          apiUrl: emulator.apiUrl,
          sandboxUrl: emulator.sandboxUrl,
          portUrl: (id, port) => emulator.portUrl(id, port),
          controlPlaneDeadlineMs: 5_000,
        },
        {},
      );
      machine = await provider.provision({
        computerId: `egress-${flavour}`,
        homeKey: `egress-${flavour}-${run}`,
        egress: POLICY,
      });
    }, 300_000);

    afterAll(async () => {
      await machine?.destroy().catch(() => {});
    }, 60_000);

    it("says it holds egress policies and sent the service exactly its network config", () => {
      expect(provider.capabilities.egress).toBe(true);
      const create = emulator.calls
        .filter((call) => call.method === "POST" && /^\/(v2\/)?sandboxes$/.test(call.path))
        .at(-1);
      expect((create?.body as { network?: unknown } | undefined)?.network).toEqual({
        allowOut: ["allowed.test", "*.wild.test", "internal.test"],
        denyOut: ["0.0.0.0/0"],
      });
      emulator.recorder.assertNoViolations();
    });

    it("reaches an allowed host by name, over HTTP (Host) and HTTPS (SNI), and through a wildcard", async () => {
      expect(await fetchFrom("http://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom("https://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom("http://a.wild.test/")).toBe("fixture allowed");
    });

    it("is refused another host, by name or address, and a private address, even under an allowed name", async () => {
      expect(await fetchFrom("http://other.test/")).toBe("refused");
      expect(await fetchFrom("https://other.test/")).toBe("refused");
      expect(await fetchFrom(`http://${other}/`)).toBe("refused");
      expect(await fetchFrom(`https://${other}/`)).toBe("refused");
      expect(await fetchFrom(`http://${internal}/`)).toBe("refused");
      // Allowed by name, resolving to a private address: the service dials the name and refuses the address.
      expect(await fetchFrom("http://internal.test/")).toBe("refused");
    });

    it("holds against a root bot in the sandbox: no rule, route, mark, hosts entry or header gets it out", async () => {
      // Root in the sandbox has no NET_ADMIN: rules and routes cannot change; the fence's proxy dials from
      // outside the sandbox's namespace, so nothing a socket carries (a mark) makes it one of the proxy's.
      const caps = await asRoot("grep CapEff /proc/self/status");
      expect(caps.exitCode).toBe(0);
      const effective = BigInt(`0x${caps.out.split(/\s+/).pop()}`);
      expect(effective & (1n << 12n)).toBe(0n);
      const privileged = await asRoot(`python3 -c '
import fcntl, socket, struct, subprocess
results = []
# A marked socket (root has CAP_NET_RAW, enough for SO_MARK) is no way past the fence.
for mark in (0x1, 0xE2B, 0x7FFFFFFF):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.setsockopt(socket.SOL_SOCKET, 36, mark)
        s.connect(("${other}", 80))
        s.sendall(b"GET / HTTP/1.0\\r\\nHost: other.test\\r\\n\\r\\n")
        results.append("marked-reached" if b"fixture" in s.recv(4096) else "marked-refused")
    except OSError:
        results.append("marked-refused")
    s.close()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
route = struct.pack("=L16s16s16sH38x", 0, struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("${allowed}")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")), 0x3)
try:
    fcntl.ioctl(s.fileno(), 0x890B, route); results.append("route-set")
except PermissionError:
    results.append("route-refused")
except OSError as error:
    results.append("route-" + str(error.errno))
for argv in (["iptables", "-F"], ["iptables", "-t", "nat", "-F"], ["nft", "flush", "ruleset"]):
    try:
        results.append(argv[0] + "-" + str(subprocess.run(argv, capture_output=True).returncode))
    except FileNotFoundError:
        results.append(argv[0] + "-missing")
print(" ".join(results))
'`);
      expect(privileged.out).toContain("marked-refused");
      expect(privileged.out).not.toContain("marked-reached");
      expect(privileged.out).not.toContain("route-set");
      expect(privileged.out).not.toMatch(/(iptables|nft)-0/);
      // The hosts file is the sandbox's; the fence resolves names itself.
      await asRoot(`echo '${other} allowed.test' >> /etc/hosts`);
      expect(await fetchFrom("http://allowed.test/")).toBe("fixture allowed");
      // An allowed name in the Host header of a connection to another public address reaches the name, not
      // the address; to a private address the connection is dropped before any name is read.
      expect(await fetchFrom(`http://${other}/`, "-H 'Host: allowed.test'")).toBe("fixture allowed");
      expect(await fetchFrom(`http://${internal}/`, "-H 'Host: allowed.test'")).toBe("refused");
      // No proxy variable to unset: the way out itself is fenced.
      expect(await fetchFrom("http://other.test/", "--noproxy '*'")).toBe("refused");
      expect(await fetchFrom(`http://${other}:443/`)).toBe("refused");
      // A refused name sent to an allowed host's address: judged by the name (SNI), then the address (denied).
      expect(await fetchFrom("https://other.test/", `--resolve other.test:443:${allowed}`)).toBe("refused");
      // And the fence is still there.
      expect(await fetchFrom("http://other.test/")).toBe("refused");
      expect(await fetchFrom("http://allowed.test/")).toBe("fixture allowed");
    });

    it("refuses, UNSUPPORTED, what the service cannot hold: credentials and a private range it always drops", async () => {
      const before = emulator.calls.length;
      await expect(
        provider.provision({
          computerId: "with-credentials",
          homeKey: `egress-credentials-${flavour}-${run}`,
          egress: {
            allow: ["allowed.test"],
            credentials: [{ host: "allowed.test", header: { name: "authorization", value: "Bearer s3cret" } }],
          },
        }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED", message: expect.not.stringContaining("s3cret") });
      await expect(
        provider.provision({
          computerId: "with-private",
          homeKey: `egress-private-${flavour}-${run}`,
          egress: { allow: ["allowed.test"], allowPrivate: ["172.17.0.0/16"] },
        }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED", message: expect.stringContaining("172.16.0.0/12") });
      // Refused before any sandbox was asked for.
      expect(
        emulator.calls.slice(before).filter((call) => call.method === "POST" && /sandboxes$/.test(call.path)),
      ).toEqual([]);
    });
  });

  describe("the emulator holds the network config to E2B's definition", () => {
    it("records a field SandboxNetworkConfig does not have, and answers a domain without ALL_TRAFFIC 400", async () => {
      const recorder = new ServiceRecorder("E2B", E2B_OPERATIONS);
      const headers = { "x-api-key": "e2b_test", "content-type": "application/json" };
      recorder.request("POST", "/v2/sandboxes", {
        body: { templateID: "t", network: { allowOut: ["a.test"], denyAll: true } },
        headers,
      });
      expect(recorder.violations.map((v) => v.message).join(" ")).toMatch(/denyAll/);
      const answer = await fetch(`${emulator.apiUrl}/v2/sandboxes`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ templateID: "computer", network: { allowOut: ["a.test"] } }),
      });
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { message: string }).message).toMatch(/ALL_TRAFFIC/);
    });
  });
}
