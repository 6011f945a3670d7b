import { randomBytes } from "node:crypto";
import type { Machine, SandboxProvider } from "@agent-computer/core";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { ensureFenceImage, ServiceRecorder } from "@agent-computer/testing/emulator";
import {
  bridgeFixtureTrio,
  type EgressFixtureTrio,
  reportMissingProvider,
} from "@agent-computer/testing/provider-test";
import { CreateosSandboxClient } from "@nodeops-createos/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createosProvider } from "../src/index.js";
import { CREATEOS_OPERATIONS, CreateosEmulator } from "../src/testing/index.js";

// Egress by policy on CreateOS (issue 53; README "Egress"): the provider on
// the real @nodeops-createos/sandbox SDK against the emulator, whose VMs are
// real containers fenced from outside their reach as the service fences its
// VMs on the host (src/testing/createos-network-fence.ts). The internet's
// stand-ins: fixture hosts on Docker's bridge answering HTTP on 80 and 8080
// and HTTPS on 443 with their own name; names resolve through the
// emulator's `publicHosts`, standing in for public DNS. The third fixture
// is what it is, a private address.

const host = await checkDockerHost();
if (host.missing) {
  reportMissingProvider("createos egress", { kind: "docker", missing: host.missing });
} else {
  const run = randomBytes(3).toString("hex");
  const apiKey = `createos_${randomBytes(20).toString("hex")}`;
  let fixtures: EgressFixtureTrio | undefined;
  let allowed = "";
  let other = "";
  let internal = "";
  let emulator: CreateosEmulator;
  let provider: SandboxProvider;
  let machine: Machine;
  const sdk = () => new CreateosSandboxClient({ apiKey, baseUrl: emulator.baseUrl, retry: false });
  const sandboxId = () => machine.ref.slice(machine.ref.indexOf(":") + 1);

  /** A command as the computer's user (the provider's exec). */
  const sh = async (script: string) => {
    const result = await machine.exec({ argv: ["sh", "-c", script] });
    return { exitCode: result.exitCode, out: Buffer.from(result.stdout).toString().trim() };
  };
  /** A command as the VM's root: the service's agent runs `/exec` as root (src/testing/createos-vms.ts VM_USER), through the SDK. */
  const asRoot = async (script: string) => {
    const sandbox = await sdk().getSandbox(sandboxId());
    const { result } = await sandbox.runCommand("sh", ["-c", script]);
    return { exitCode: result.exit_code, out: `${result.stdout.trim()}${result.stderr.trim()}` };
  };
  /** What a GET answers (the fixture's reply), or "refused" when nothing came back. */
  const fetchFrom = async (url: string, extra = "", as = sh) => {
    const { exitCode, out } = await as(`curl -sk --connect-timeout 2 --max-time 5 ${extra} ${url}`);
    return exitCode === 0 ? out : "refused";
  };

  beforeAll(async () => {
    // Made before any create asks for it: the first time, apt takes longer than one request may.
    await ensureFenceImage(host.docker);
    fixtures = await bridgeFixtureTrio(host.docker, host.image, `ac-createos-egress-${run}`, {
      label: "agent-computer.test/createos-egress",
      ports: [80, 443, 8080],
    });
    ({ allowed, other, internal } = fixtures);
    emulator = new CreateosEmulator({
      docker: host.docker,
      apiKey,
      rootfs: { computer: host.image },
      publicHosts: { "allowed.test": allowed, "other.test": other, "internal.test": internal },
    });
    await emulator.start();
    provider = createosProvider({ apiKey, baseUrl: emulator.baseUrl, rootfs: "computer", retryMs: 5_000 }, {});
    // `internal` is a private address and the policy has no allowPrivate: left out of what is sent.
    machine = await provider.provision({
      computerId: "egress",
      homeKey: `egress-${run}`,
      egress: { name: "fixtures", allow: ["allowed.test", internal] },
    });
  }, 300_000);

  afterAll(async () => {
    try {
      emulator?.recorder.assertNoViolations();
    } finally {
      await machine?.destroy().catch(() => {});
      await emulator?.close();
      await fixtures?.remove();
    }
  }, 120_000);

  describe("egress by policy on createos", () => {
    it("says it holds egress policies and asked the service for exactly the allow rules the policy needs", async () => {
      expect(provider.capabilities.egress).toBe(true);
      const create = emulator.createBodies.at(-1) as Record<string, unknown>;
      expect(create).toEqual({
        shape: "s-4vcpu-4gb",
        rootfs: "computer",
        name: expect.any(String),
        ingress_enabled: true,
        egress: ["allowed.test:443", "allowed.test:80"],
      });
      // The service holds it (the SDK's getEgress).
      expect((await (await sdk().getSandbox(sandboxId())).getEgress()).egress).toEqual(create.egress);
      emulator.recorder.assertNoViolations();
    });

    it("reaches the allowed host by name, over HTTP and HTTPS", async () => {
      expect(await fetchFrom("http://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom("https://allowed.test/")).toBe("fixture allowed");
    });

    it("is refused another host by name or address, a private address, and the allowed host on another port", async () => {
      expect(await fetchFrom("http://other.test/")).toBe("refused");
      expect(await fetchFrom("https://other.test/")).toBe("refused");
      expect(await fetchFrom(`http://${other}/`)).toBe("refused");
      expect(await fetchFrom(`http://${internal}/`)).toBe("refused");
      expect(await fetchFrom("http://internal.test/")).toBe("refused");
      expect(await fetchFrom("http://allowed.test:8080/")).toBe("refused");
    });

    it("holds against the VM's root: no rule, route, raw socket, hosts entry, proxy setting or address gets it out", async () => {
      // Root holds neither NET_ADMIN (bit 12) nor NET_RAW (bit 13): the rules are outside the VM's reach.
      const caps = await asRoot("grep CapEff /proc/self/status");
      const effective = BigInt(`0x${caps.out.split(/\s+/).pop()}`);
      expect(effective & (1n << 12n)).toBe(0n);
      expect(effective & (1n << 13n)).toBe(0n);
      const privileged = await asRoot(`python3 -c '
import fcntl, socket, struct, subprocess
results = []
for family, kind, proto, name in ((socket.AF_PACKET, socket.SOCK_RAW, 0x0300, "packet"),
                                  (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP, "raw")):
    try:
        socket.socket(family, kind, proto).close(); results.append(name + "-open")
    except PermissionError:
        results.append(name + "-refused")
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
route = struct.pack("=L16s16s16sH38x", 0, struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("${allowed}")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")), 0x3)
try:
    fcntl.ioctl(s.fileno(), 0x890B, route); results.append("route-set")
except OSError:
    results.append("route-refused")
for argv in (["iptables", "-F"], ["iptables", "-t", "nat", "-F"], ["iptables", "-t", "mangle", "-F"], ["nft", "flush", "ruleset"]):
    try:
        results.append(argv[0] + "-" + str(subprocess.run(argv, capture_output=True).returncode))
    except FileNotFoundError:
        results.append(argv[0] + "-missing")
print(" ".join(results))
'`);
      expect(privileged.out).toContain("packet-refused");
      expect(privileged.out).toContain("raw-refused");
      expect(privileged.out).toContain("route-refused");
      expect(privileged.out).not.toMatch(/(iptables|nft)-0|-open|route-set/);
      // No proxy to unset: the way out itself is fenced, for root as for the user.
      expect(await fetchFrom("http://other.test/", "--noproxy '*'", asRoot)).toBe("refused");
      expect(await fetchFrom(`http://${other}/`, "-H 'Host: allowed.test'", asRoot)).toBe("refused");
      expect(await fetchFrom(`http://${internal}/`, "", asRoot)).toBe("refused");
      // The rules hold addresses: pointing the allowed name elsewhere in the VM's hosts file gets nowhere.
      await asRoot(`cp /etc/hosts /tmp/hosts && echo '${other} allowed.test' > /etc/hosts`);
      expect(await fetchFrom("http://allowed.test/", "", asRoot)).toBe("refused");
      await asRoot("cat /tmp/hosts > /etc/hosts");
      // And the fence is still there.
      expect(await fetchFrom("http://other.test/")).toBe("refused");
      expect(await fetchFrom("http://allowed.test/")).toBe("fixture allowed");
    });

    it("refuses, UNSUPPORTED, what the service cannot hold, before any request", async () => {
      const before = emulator.createBodies.length;
      const refused = async (egress: Parameters<SandboxProvider["provision"]>[0]["egress"], message: RegExp) =>
        expect(provider.provision({ computerId: "refused", homeKey: `refused-${run}`, egress })).rejects.toMatchObject({
          code: "UNSUPPORTED",
          message: expect.stringMatching(message),
        });
      // Any public host: the service's open setting lets private ranges and metadata out too.
      await refused({ name: "open" }, /any public host/);
      await refused({ allow: ["*.allowed.test"] }, /wildcard/);
      await refused({ allow: [] }, /no destination/);
      // Only private addresses without allowPrivate, or the metadata address whatever allowPrivate says: nothing left.
      await refused({ allow: [internal] }, /no destination/);
      await refused({ allow: ["169.254.169.254"] }, /no destination/);
      // A private range holding the metadata address: refused as core's address rules refuse it everywhere.
      await expect(
        provider.provision({
          computerId: "refused",
          homeKey: `refused-${run}`,
          egress: { allow: ["169.254.169.254"], allowPrivate: ["169.254.0.0/16"] },
        }),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("metadata") });
      await expect(
        provider.provision({
          computerId: "refused",
          homeKey: `refused-${run}`,
          egress: {
            allow: ["allowed.test"],
            credentials: [{ host: "allowed.test", header: { name: "authorization", value: "Bearer s3cret" } }],
          },
        }),
      ).rejects.toMatchObject({ code: "UNSUPPORTED", message: expect.not.stringContaining("s3cret") });
      expect(emulator.createBodies.length).toBe(before);
    });
  });

  describe("a service that does not say, or does not hold, the allowlist", () => {
    const provision = (key: string) =>
      provider.provision({ computerId: key, homeKey: `${key}-${run}`, egress: { allow: ["allowed.test"] } });
    afterAll(() => {
      emulator.createEgress = "held";
    });

    it("reads the sandbox's egress when the create's answer leaves it out, and goes on when it is held", async () => {
      emulator.createEgress = "omitted";
      const reads = () => emulator.requests.filter((request) => /^GET \/v1\/sandboxes\/[^/]+\/egress$/.test(request));
      const before = reads().length;
      const held = await provision("omitted");
      try {
        expect(reads().length).toBe(before + 1);
        expect(await held.exec({ argv: ["true"] }).then((result) => result.exitCode)).toBe(0);
      } finally {
        await held.destroy();
      }
    }, 120_000);

    it("refuses, and destroys, a sandbox the service left open", async () => {
      emulator.createEgress = "ignored";
      const before = emulator.createBodies.length;
      await expect(provision("ignored")).rejects.toMatchObject({
        code: "UNSUPPORTED",
        message: expect.stringMatching(/did not take .*egress allowlist/),
      });
      expect(emulator.createBodies.length).toBe(before + 1);
      // Not left running: destroyed at once.
      const name = (emulator.createBodies.at(-1) as { name: string }).name;
      const made = (await sdk().listSandboxes()).find((sandbox) => sandbox.name === name);
      expect(["destroying", "destroyed"]).toContain(emulator.statusOf(made?.id ?? ""));
    }, 120_000);
  });

  describe("the emulator holds egress to CreateOS's definition", () => {
    it("records an ill-typed egress, answers a malformed rule 400, and replaces the list with setEgress", async () => {
      const recorder = new ServiceRecorder("CreateOS", CREATEOS_OPERATIONS);
      const headers = { "x-api-key": "k", "content-type": "application/json" };
      recorder.request("POST", "/v1/sandboxes", { body: { shape: "s", egress: "allowed.test" }, headers });
      recorder.request("PUT", "/v1/sandboxes/sb_1/egress", { body: { egress: ["a.test"], mode: "allow" }, headers });
      expect(recorder.violations.map((v) => `${v.operation} ${v.message}`).join(" ")).toMatch(
        /createSandbox .*egress.*setEgress .*mode/s,
      );
      const sandbox = await sdk().getSandbox(sandboxId());
      await expect(sandbox.setEgress(["allowed.test:http"])).rejects.toMatchObject({ statusCode: 400 });
      // Rules replaced at once: the other host's address on 80 only.
      expect((await sandbox.setEgress([`${other}:80`])).egress).toEqual([`${other}:80`]);
      expect(await fetchFrom(`http://${other}/`)).toBe("fixture other");
      expect(await fetchFrom(`http://${other}:8080/`)).toBe("refused");
      expect(await fetchFrom("http://allowed.test/")).toBe("refused");
      // And opened again (null: "allow all").
      expect((await sandbox.setEgress(null)).egress).toEqual([]);
      expect(await fetchFrom(`http://${other}:8080/`)).toBe("fixture other");
    }, 60_000);
  });
}
