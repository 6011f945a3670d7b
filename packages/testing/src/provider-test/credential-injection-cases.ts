import { createHash } from "node:crypto";
import type { Machine } from "@agent-computer/core";
import { expect, it } from "vitest";
import { nodeHttpsGet } from "./credential-fixtures.js";
import { PROCESS_MEMORY_SCAN } from "./process-memory-scan.js";

// What credentials added on the way out do for a program in the computer,
// the same on every provider that runs the egress proxy (provider-docker's
// docker-egress-credentials.test.ts, provider-kubernetes'
// kubernetes-egress-credentials.test.ts), against the fixture API
// (credential-fixtures.ts) under its three names: `api.example.test` with a
// bearer header, `basic.example.test` with basic auth, and
// `untouched.example.test` allowed but named in no credential.

/** A shell command in the credentialed computer, as its bot runs one. */
export type ComputerShell = (
  script: string,
  stdin?: string,
) => Promise<{ exitCode: number | null; out: string; err: string }>;

/** A ComputerShell over a machine's exec; `machine` is read at each call (a suite's machine is made in its beforeAll). */
export function computerShell(machine: () => Machine): ComputerShell {
  return async (script, stdin) => {
    const result = await machine().exec({
      argv: ["sh", "-c", script],
      ...(stdin ? { stdin: new TextEncoder().encode(stdin) } : {}),
    });
    return {
      exitCode: result.exitCode,
      out: Buffer.from(result.stdout).toString(),
      err: Buffer.from(result.stderr).toString(),
    };
  };
}

export interface CredentialInjectionSetting {
  /** The computer's shell; called once the suite's setup ran. */
  readonly sh: ComputerShell;
  /** The bearer token `api.example.test`'s credential adds. */
  readonly token: string;
  /** `basic.example.test`'s credential: user `bot-user` and this password. */
  readonly password: string;
  /** The fixture API's own CA, which the proxy trusts and the computer does not. */
  readonly fixtureCaCertificate: string;
}

/** The SHA-256 the fixture API answers of the `authorization` header it got ("" for none). */
export const authorizationSeen = (out: string) => (JSON.parse(out) as { authorization: string }).authorization;
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Declares the cases (inside the provider's `describe`). */
export function credentialInjectionCases(setting: CredentialInjectionSetting): void {
  const { sh, token, password } = setting;
  it("adds the named host's header to curl's HTTPS request, to node's through NODE_EXTRA_CA_CERTS, and to plain HTTP", async () => {
    const secure = await sh("curl -sS --max-time 10 https://api.example.test:8443/");
    expect(secure.exitCode, secure.err).toBe(0);
    expect(authorizationSeen(secure.out)).toBe(sha256(`Bearer ${token}`));
    const node = await sh(`node -e '${nodeHttpsGet("api.example.test", 8443, "/node")}'`);
    expect(node.exitCode, node.err).toBe(0);
    expect(authorizationSeen(node.out)).toBe(sha256(`Bearer ${token}`));
    const plain = await sh("curl -sS --max-time 10 http://api.example.test:8080/");
    expect(authorizationSeen(plain.out)).toBe(sha256(`Bearer ${token}`));
  });

  it("replaces a header of the same name the program sent, and adds basic auth", async () => {
    const forged = await sh("curl -sS --max-time 10 -H 'Authorization: Bearer mine' https://api.example.test:8443/");
    expect(authorizationSeen(forged.out)).toBe(sha256(`Bearer ${token}`));
    const basic = await sh("curl -sS --max-time 10 https://basic.example.test:8443/");
    const expected = `Basic ${Buffer.from(`bot-user:${password}`).toString("base64")}`;
    expect(authorizationSeen(basic.out)).toBe(sha256(expected));
  });

  it("tunnels a host not named untouched: no header, and the host's own certificate reaches the client", async () => {
    await sh("cat > fixture-ca.pem", setting.fixtureCaCertificate);
    const own = await sh("curl -sS --max-time 10 --cacert fixture-ca.pem https://untouched.example.test:8443/");
    expect(own.exitCode, own.err).toBe(0);
    expect(authorizationSeen(own.out)).toBe("");
    // The computer's CA does not vouch for it: the proxy showed nothing of its own there.
    const viaComputerCa = await sh("curl -sS --max-time 10 https://untouched.example.test:8443/");
    expect(viaComputerCa.exitCode).not.toBe(0);
    // And for a named host the fixture's CA alone fails: that one is the proxy's certificate.
    const named = await sh("curl -sS --max-time 10 --cacert fixture-ca.pem https://api.example.test:8443/");
    expect(named.exitCode).not.toBe(0);
  });
}

/**
 * No process the computer's shell sees holds any of `needles` (its
 * environment, command line or readable memory: PROCESS_MEMORY_SCAN), and
 * a control process started with `control` in its environment is found by
 * the same scan, so a scan that reads nothing cannot pass.
 */
export async function expectNoProcessHolds(sh: ComputerShell, needles: readonly string[], control: string) {
  const scan = async (needle: string) =>
    (await sh(`python3 -c '${PROCESS_MEMORY_SCAN}'`, needle)).out.trim().split(" ").map(Number) as [number, number];
  for (const needle of needles) {
    const [scanned, holding] = await scan(needle);
    expect(scanned, "the scan read the computer's processes").toBeGreaterThan(0);
    expect(holding, "processes holding it").toBe(0);
  }
  await sh(`(AC_CONTROL=${control} setsid sleep 30 >/dev/null 2>&1 < /dev/null & echo $! > control.pid)`);
  const [, found] = await scan(control);
  await sh("kill $(cat control.pid); rm control.pid");
  expect(found, "the control process holding it").toBeGreaterThan(0);
}
