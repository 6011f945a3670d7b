import { createPublicKey, randomBytes, X509Certificate } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Machine } from "@agent-computer/core";
import { computerImageRef } from "@agent-computer/desktop-runtime";
import { issueInterceptionCertificates } from "@agent-computer/egress";
import {
  authorizationSeen,
  computerShell,
  credentialInjectionCases,
  expectNoProcessHolds,
  fixtureApi,
  temporaryDataDir,
} from "@agent-computer/testing/provider-test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { egressProxyName } from "../src/egress-proxy-container.js";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// Credentials added on the way out, on the real engine (issue 53; README,
// "Egress by policy"). The fixture API has its own CA, which only the proxy
// trusts (the provider's `egressUpstreamCa`, as an operator names an
// internal API's CA): the computer trusts its own CA only for the hosts the
// policy names, and a host not named reaches the computer with the
// fixture's certificate, untouched.
const env = await dockerTestEnvironment("docker egress credentials");
if (!env.missing) {
  const run = Math.random().toString(36).slice(2, 8);
  const token = `tok-${randomBytes(16).toString("hex")}`;
  const password = `pw-${randomBytes(16).toString("hex")}`;
  const fixtureTls = issueInterceptionCertificates("fixture", [
    "api.example.test",
    "basic.example.test",
    "untouched.example.test",
  ]);
  let fenced: Machine;
  let api: Awaited<ReturnType<typeof fixtureApi>>;
  let dataDir = "";

  const sh = computerShell(() => fenced);

  beforeAll(async () => {
    dataDir = await temporaryDataDir();
    const image = await computerImageRef();
    api = await fixtureApi(
      env.docker,
      image,
      `ac-egress-cred-${run}`,
      "10.217",
      ["api.example.test", "basic.example.test", "untouched.example.test"],
      fixtureTls,
    );
    const provider = env.provider({ dataDir, egressUpstreamCa: fixtureTls.caCertificate });
    fenced = await provider.provision({
      computerId: "credentialed",
      homeKey: `egress-credentials-${run}`,
      egress: {
        name: "api-credentials",
        allow: ["api.example.test", "basic.example.test", "untouched.example.test"],
        allowPrivate: [api.subnet],
        credentials: [
          { host: "api.example.test", header: { name: "Authorization", value: `Bearer ${token}` } },
          { host: "basic.example.test", basic: { username: "bot-user", password } },
        ],
      },
    });
    // The operator's step of this test: the proxy reaches the fixture's network.
    await env.docker.getNetwork(api.network).connect({ Container: egressProxyName(dataDir) });
  }, 180_000);

  afterAll(async () => {
    await fenced?.destroy().catch(() => {});
    await env.docker
      .getContainer(egressProxyName(dataDir))
      .remove({ force: true })
      .catch(() => {});
    await api?.remove();
  }, 60_000);

  describe("docker egress credentials", () => {
    credentialInjectionCases({ sh, token, password, fixtureCaCertificate: fixtureTls.caCertificate });

    it("leaves the token and the password nowhere in the computer: files, environment, memory", async () => {
      // Requests made first, with the credentials added, so the programs that used the proxy have run.
      for (const host of ["api", "basic"]) {
        const used = await sh(`curl -sS --max-time 10 https://${host}.example.test:8443/`);
        expect(authorizationSeen(used.out)).not.toBe("");
      }
      for (const secret of [token, password]) {
        const files = await sh(
          "grep -rlF --devices=skip -f /dev/stdin / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true",
          secret,
        );
        expect(files.out.trim(), "files holding the secret").toBe("");
      }
      await expectNoProcessHolds(sh, [token, password], token);
      // Nor in what the engine shows of the computer and its network.
      const info = await env.docker.getContainer(fenced.ref.slice("docker:".length)).inspect();
      const network = await env.docker.getNetwork(Object.keys(info.NetworkSettings.Networks)[0] ?? "").inspect();
      expect(JSON.stringify([info, network])).not.toContain(token);
      expect(JSON.stringify([info, network])).not.toContain(password);
    });

    it("keeps every private key out of the computer, and no file anywhere holds the CA's", async () => {
      const mounted = await sh("ls /etc/agent-computer/egress; cat /etc/agent-computer/egress/*");
      expect(mounted.out.split("\n").slice(0, 2)).toEqual(["bundle.pem", "ca.pem"]);
      expect(mounted.out).not.toContain("PRIVATE KEY");
      const ca = new X509Certificate((await sh("cat /etc/agent-computer/egress/ca.pem")).out);
      expect(ca.ca).toBe(true);
      // The proxy's files: the one key there is the proxy's certificate's, never the CA's.
      const keys = await privateKeysUnder(join(dataDir, "egress"));
      expect(keys.length).toBeGreaterThan(0);
      const caPublic = ca.publicKey.export({ type: "spki", format: "der" });
      for (const key of keys) {
        expect(createPublicKey(key).export({ type: "spki", format: "der" }).equals(caPublic)).toBe(false);
        // Its base64 body, line by line: none of it in the computer's files.
        const line = key.split(/\r?\n/)[3] ?? "";
        expect(line.length).toBeGreaterThan(40);
        const found = await sh(
          "grep -rlF --devices=skip -f /dev/stdin / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true",
          line,
        );
        expect(found.out.trim()).toBe("");
      }
    });
  });
}

/** Every PEM private key in the files under `dir` (the credentials files hold theirs as JSON strings). */
async function privateKeysUnder(dir: string): Promise<string[]> {
  const keys: string[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const text = await readFile(join(entry.parentPath, entry.name), "utf8");
    const unescaped = text.replaceAll("\\r", "").replaceAll("\\n", "\n").replaceAll("\r", "");
    for (const match of unescaped.matchAll(
      /-----BEGIN (RSA )?PRIVATE KEY-----[\s\S]+?-----END (RSA )?PRIVATE KEY-----/g,
    ))
      keys.push(match[0]);
  }
  return keys;
}
