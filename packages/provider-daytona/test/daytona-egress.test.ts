import { randomBytes } from "node:crypto";
import { COMPUTER_LABELS, type Machine, type SandboxProvider } from "@agent-computer/core";
import { checkDockerHost } from "@agent-computer/provider-docker";
import { ensureFenceImage, ServiceRecorder } from "@agent-computer/testing/emulator";
import {
  bridgeFixtureTrio,
  type EgressFixtureTrio,
  reportMissingProvider,
} from "@agent-computer/testing/provider-test";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daytonaProvider } from "../src/index.js";
import { DAYTONA_OPERATIONS, DaytonaEmulator } from "../src/testing/index.js";

// Egress by policy on Daytona (issue 53; README "Egress"): the real
// `@daytonaio/sdk` as the provider drives it, against the emulator, whose
// sandboxes are real containers fenced from outside with the runner's rules
// (src/testing/daytona-network-fence.ts). The internet's stand-ins: fixture
// hosts on Docker's bridge, answering HTTP on 80 and HTTPS on 443 with their
// own name; names resolve through the emulator's `publicHosts`. Daytona's
// lists have no ranges they always drop, so the fixtures' private addresses
// need no standing in: a policy lets one through by allowPrivate.

/** A command in a container as root, with the container's own capabilities: its output. */
async function asRoot(docker: Docker, containerId: string, script: string): Promise<string> {
  const exec = await docker.getContainer(containerId).exec({
    Cmd: ["sh", "-c", script],
    User: "0:0",
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise((done) => stream.on("data", (chunk: Buffer) => chunks.push(chunk)).on("end", done));
  // The engine's multiplexed frames: an 8-byte header each.
  const all = Buffer.concat(chunks);
  const out: Buffer[] = [];
  for (let at = 0; at + 8 <= all.length; ) {
    const size = all.readUInt32BE(at + 4);
    out.push(all.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(out).toString("utf8").trim();
}

/**
 * A program that tries the ways out a process in the sandbox has: sudo, a
 * raw socket, a default route through another host, flushing the rules,
 * a marked socket to a refused host. Says what each came to.
 */
function escapeAttempts(target: string): string {
  return `
import fcntl, socket, struct, subprocess
results = []
try:
    results.append("sudo-" + str(subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode))
except FileNotFoundError:
    results.append("sudo-missing")
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    results.append("raw-opened")
except PermissionError:
    results.append("raw-refused")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
route = struct.pack("=L16s16s16sH38x", 0, struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("${target}")),
    struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton("0.0.0.0")), 0x3)
try:
    fcntl.ioctl(s.fileno(), 0x890B, route)
    results.append("route-set")
except PermissionError:
    results.append("route-refused")
except OSError as error:
    results.append("route-" + str(error.errno))
try:
    results.append("nft-" + str(subprocess.run(["nft", "flush", "ruleset"], capture_output=True).returncode))
except FileNotFoundError:
    results.append("nft-missing")
for mark in (0x1, 0x3E7):
    m = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    m.settimeout(3)
    try:
        m.setsockopt(socket.SOL_SOCKET, 36, mark)
        m.connect(("${target}", 80))
        m.sendall(b"GET / HTTP/1.0\\r\\nHost: other.test\\r\\n\\r\\n")
        results.append("marked-reached" if b"fixture" in m.recv(4096) else "marked-refused")
    except PermissionError:
        results.append("mark-not-permitted")
    except OSError:
        results.append("marked-refused")
    m.close()
print(" ".join(results))
`;
}

const host = await checkDockerHost();
if (host.missing) {
  reportMissingProvider("daytona egress", { kind: "docker", missing: host.missing });
} else {
  const run = randomBytes(3).toString("hex");
  let fixtures: EgressFixtureTrio | undefined;
  let allowed = "";
  let other = "";
  let internal = "";
  let emulator: DaytonaEmulator;
  let provider: SandboxProvider;
  const apiKey = `dtn_${randomBytes(20).toString("hex")}`;
  const machines: Machine[] = [];
  const createsSince = (count: number) => emulator.createBodies.slice(count);

  beforeAll(async () => {
    // Made before any create asks for it: the first time, apt takes longer than one start may.
    await ensureFenceImage(host.docker);
    fixtures = await bridgeFixtureTrio(host.docker, host.image, `ac-daytona-egress-${run}`, {
      label: "agent-computer.test/daytona-egress",
    });
    ({ allowed, other, internal } = fixtures);
    emulator = new DaytonaEmulator({
      docker: host.docker,
      apiKey,
      publicHosts: { "allowed.test": allowed, "a.wild.test": allowed, "other.test": other, "internal.test": internal },
    });
    await emulator.start();
    provider = daytonaProvider({
      apiKey,
      apiUrl: emulator.apiUrl,
      snapshot: host.image,
      previewUrl: (preview) => emulator.previewTunnel(preview.url),
    });
  }, 300_000);

  afterAll(async () => {
    try {
      emulator?.recorder.assertNoViolations();
    } finally {
      for (const machine of machines) await machine.destroy().catch(() => {});
      await emulator?.close();
      await fixtures?.remove();
    }
  }, 120_000);

  /** What a GET answers (the fixture's reply) as the sandbox's user, or "refused" when nothing came back. */
  const fetchFrom = async (machine: Machine, url: string, extra = "") => {
    const result = await machine.exec({
      argv: ["sh", "-c", `curl -sk --connect-timeout 2 --max-time 5 ${extra} ${url}`],
    });
    return result.exitCode === 0 ? Buffer.from(result.stdout).toString().trim() : "refused";
  };
  const containerOf = (machine: Machine) => emulator.containerOf(machine.ref.slice("daytona:".length)) as string;

  describe("a policy of names: the domain allow list", () => {
    let machine: Machine;
    beforeAll(async () => {
      const before = emulator.createBodies.length;
      machine = await provider.provision({
        computerId: "egress-names",
        homeKey: `egress-names-${run}`,
        egress: { name: "names", allow: ["allowed.test", "*.wild.test"] },
      });
      machines.push(machine);
      expect(createsSince(before)).toHaveLength(1);
    }, 300_000);

    it("says it holds egress policies and sent the service exactly its domain list", () => {
      expect(provider.capabilities.egress).toBe(true);
      const body = emulator.createBodies.find(
        (b) => (b.labels as Record<string, string>)?.[COMPUTER_LABELS.computerId] === "egress-names",
      );
      expect(body).toMatchObject({ domainAllowList: "allowed.test,*.wild.test" });
      expect(body).not.toHaveProperty("networkAllowList");
      expect(body).not.toHaveProperty("networkBlockAll");
      emulator.recorder.assertNoViolations();
    });

    it("reaches an allowed host by name, over HTTP and HTTPS, and through a wildcard", async () => {
      expect(await fetchFrom(machine, "http://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom(machine, "https://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom(machine, "http://a.wild.test/")).toBe("fixture allowed");
    });

    it("is refused another host, by name or address, and a private address", async () => {
      expect(await fetchFrom(machine, "http://other.test/")).toBe("refused");
      expect(await fetchFrom(machine, "https://other.test/")).toBe("refused");
      expect(await fetchFrom(machine, `http://${other}/`)).toBe("refused");
      expect(await fetchFrom(machine, `https://${other}/`)).toBe("refused");
      expect(await fetchFrom(machine, `http://${internal}/`)).toBe("refused");
      expect(await fetchFrom(machine, `http://${other}:443/`)).toBe("refused");
    });

    it("holds against the bot: no proxy to unset, no sudo, no rule, route or raw socket gets it out", async () => {
      const bot = await machine.exec({ argv: ["python3", "-c", escapeAttempts(other)] });
      const said = Buffer.from(bot.stdout).toString();
      // The computer image's user has no sudo to try; no rule, route or raw socket is its to make.
      expect(said).toContain("sudo-missing");
      expect(said).toContain("raw-refused");
      expect(said).toContain("route-refused");
      expect(said).toMatch(/nft-[1-9]/);
      expect(said).not.toContain("marked-reached");
      expect(await fetchFrom(machine, "http://other.test/", "--noproxy '*'")).toBe("refused");
      expect(await fetchFrom(machine, `http://${other}/`, "-H 'Host: allowed.test'")).not.toBe("fixture other");
      expect(await fetchFrom(machine, "https://other.test/", `--resolve other.test:443:${allowed}`)).toBe("refused");
    });

    it("holds against root in the container, who has no NET_ADMIN there", async () => {
      const id = containerOf(machine);
      const caps = await asRoot(host.docker, id, "grep CapEff /proc/self/status");
      expect(BigInt(`0x${caps.split(/\s+/).pop()}`) & (1n << 12n)).toBe(0n);
      const said = await asRoot(host.docker, id, `python3 -c '${escapeAttempts(other)}'`);
      expect(said).toContain("route-refused");
      expect(said).toMatch(/nft-[1-9]/);
      expect(said).toMatch(/marked-refused|mark-not-permitted/);
      expect(said).not.toContain("marked-reached");
      // The hosts file is the sandbox's; the fence resolves a name itself.
      await asRoot(host.docker, id, `echo '${other} allowed.test' >> /etc/hosts`);
      expect(await fetchFrom(machine, "http://allowed.test/")).toBe("fixture allowed");
      expect(await fetchFrom(machine, "http://other.test/")).toBe("refused");
    });
  });

  describe("a policy of addresses: the CIDR allow list", () => {
    let machine: Machine;
    beforeAll(async () => {
      machine = await provider.provision({
        computerId: "egress-addresses",
        homeKey: `egress-addresses-${run}`,
        // The fixture's address is private: core's rules need allowPrivate for it, and so does the mapping.
        egress: { name: "addresses", allow: [allowed, internal], allowPrivate: [`${allowed}/32`] },
      });
      machines.push(machine);
    }, 300_000);

    it("sent the service exactly the addresses core's rules let through, each a /32", () => {
      const body = emulator.createBodies.find(
        (b) => (b.labels as Record<string, string>)?.[COMPUTER_LABELS.computerId] === "egress-addresses",
      );
      expect(body).toMatchObject({ networkAllowList: `${allowed}/32` });
      expect(body).not.toHaveProperty("domainAllowList");
      emulator.recorder.assertNoViolations();
    });

    it("reaches the allowed address and nothing else, a private one it left out included", async () => {
      expect(await fetchFrom(machine, `http://${allowed}/`)).toBe("fixture allowed");
      expect(await fetchFrom(machine, `https://${allowed}/`)).toBe("fixture allowed");
      expect(await fetchFrom(machine, `http://${other}/`)).toBe("refused");
      expect(await fetchFrom(machine, `http://${internal}/`)).toBe("refused");
      expect(await fetchFrom(machine, "http://other.test/", "--noproxy '*'")).toBe("refused");
    });

    it("is still fenced after a stop and a start (the runner re-hooks its chain)", async () => {
      const id = machine.ref.slice("daytona:".length);
      await emulator.stopBehindTheProvider(id);
      const again = await provider.reconnect(machine.ref);
      expect(again).not.toBe("gone");
      const restarted = again as Machine;
      expect(await fetchFrom(restarted, `http://${other}/`)).toBe("refused");
      expect(await fetchFrom(restarted, `http://${allowed}/`)).toBe("fixture allowed");
    }, 120_000);
  });

  describe("what Daytona cannot hold is refused UNSUPPORTED, before any request", () => {
    it.each([
      [
        "credentials",
        {
          allow: ["allowed.test"],
          credentials: [{ host: "allowed.test", header: { name: "authorization", value: "Bearer s3cret" } }],
        },
        /credentials/,
      ],
      ["any public host (no allow list)", {}, /any public host/],
      ["names and addresses at once", { allow: ["allowed.test", "8.8.8.8"] }, /names and addresses/],
      ["a name its domain list cannot hold", { allow: ["localhost"] }, /localhost/],
      ["more than ten names", { allow: Array.from({ length: 11 }, (_, i) => `h${i}.allowed.test`) }, /at most 10/],
    ])("%s", async (_, egress, message) => {
      const before = emulator.createBodies.length;
      const requests = emulator.requests.length;
      const error = await provider.provision({ computerId: "refused", homeKey: `egress-refused-${run}`, egress }).then(
        () => undefined,
        (thrown: unknown) => thrown as { code?: string; message: string },
      );
      expect(error).toMatchObject({ code: "UNSUPPORTED", message: expect.stringMatching(message) });
      expect(error?.message).not.toContain("s3cret");
      expect(createsSince(before)).toEqual([]);
      expect(emulator.requests.slice(requests)).toEqual([]);
    });

    it("a policy that lets nothing through blocks all", async () => {
      const { daytonaNetworkOf } = await import("../src/daytona-network.js");
      const resolved = { name: "none", allowPrivate: [], credentials: [] };
      expect(daytonaNetworkOf({ ...resolved, allow: [] })).toEqual({ networkBlockAll: true });
      // A private address core's rules refuse is left out, never opened.
      expect(daytonaNetworkOf({ ...resolved, allow: ["10.1.2.3"] })).toEqual({ networkBlockAll: true });
      expect(
        daytonaNetworkOf({ ...resolved, allow: ["8.8.8.8", "10.1.2.3", "192.0.2.1"], allowPrivate: ["10.1.0.0/16"] }),
      ).toEqual({ networkAllowList: "8.8.8.8/32,10.1.2.3/32" });
    });
  });

  describe("the emulator holds the network fields to Daytona's definition", () => {
    it("records a field CreateSandbox does not have and a list of the wrong type", () => {
      const recorder = new ServiceRecorder("Daytona", DAYTONA_OPERATIONS);
      const headers = { authorization: "Bearer x", "content-type": "application/json" };
      recorder.request("POST", "/api/sandbox", { body: { snapshot: "s", networkDenyList: "1.2.3.4/32" }, headers });
      recorder.request("POST", "/api/sandbox", { body: { snapshot: "s", networkAllowList: ["1.2.3.4/32"] }, headers });
      const said = recorder.violations.map((v) => v.message).join(" ");
      expect(said).toMatch(/networkDenyList/);
      expect(said).toMatch(/networkAllowList/);
    });

    it.each([
      [{ networkAllowList: "1.2.3.4" }, /Missing CIDR prefix length/],
      [{ networkAllowList: "example.com/32" }, /Must be a valid IPv4 address/],
      [{ networkAllowList: Array.from({ length: 11 }, (_, i) => `1.2.3.${i}/32`).join(",") }, /more than 10 networks/],
      [{ domainAllowList: "localhost" }, /Invalid domain: "localhost"/],
      [
        { domainAllowList: Array.from({ length: 11 }, (_, i) => `h${i}.example.com`).join(",") },
        /more than 10 domains/,
      ],
    ])("answers %j 400 as the API does", async (fields, message) => {
      const before = emulator.recorder.violations.length;
      const answer = await fetch(`${emulator.apiUrl}/sandbox`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ snapshot: host.image, ...fields }),
      });
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { message: string }).message).toMatch(message);
      expect(emulator.recorder.violations.slice(before)).toEqual([]);
    });
  });
}
