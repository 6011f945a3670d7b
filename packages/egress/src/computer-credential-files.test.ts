import { createPublicKey, X509Certificate } from "node:crypto";
import tls from "node:tls";
import { describe, expect, it } from "vitest";
import { computerCredentialFiles } from "./computer-credential-files.js";
import type { EgressCredentialsFile } from "./policy-directory.js";

// What a provider hands out for a policy's credentials (provider-docker's
// files, provider-kubernetes' Secret): the secrets on the proxy's side only.
describe("computerCredentialFiles", () => {
  const credentials = [
    { host: "api.test", header: { name: "Authorization", value: "Bearer tok-unit" } },
    { host: "basic.test", basic: { username: "u", password: "pw-unit" } },
  ];
  const files = computerCredentialFiles("unit", credentials);
  const proxyFile = JSON.parse(files.credentialsFile) as EgressCredentialsFile;

  it("gives the proxy the values and its certificate for every named host, signed by the computer's CA", () => {
    expect(proxyFile.credentials).toEqual(credentials);
    const ca = new X509Certificate(files.computerFiles["ca.pem"]);
    const leaf = new X509Certificate(proxyFile.certificate);
    expect(ca.ca).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toBe("DNS:api.test, DNS:basic.test");
    // The one key is the proxy's certificate's: the CA's was dropped once it signed.
    const keyPublic = createPublicKey(proxyFile.key).export({ type: "spki", format: "der" });
    expect(keyPublic.equals(leaf.publicKey.export({ type: "spki", format: "der" }))).toBe(true);
    expect(keyPublic.equals(ca.publicKey.export({ type: "spki", format: "der" }))).toBe(false);
  });

  it("gives the computer only public files and the variables that point at them", () => {
    const computerSide = JSON.stringify([files.computerFiles, files.env]);
    for (const secret of ["tok-unit", "pw-unit", "PRIVATE KEY"]) expect(computerSide).not.toContain(secret);
    expect(files.computerFiles["bundle.pem"].startsWith(tls.rootCertificates[0] as string)).toBe(true);
    expect(files.computerFiles["bundle.pem"].endsWith(files.computerFiles["ca.pem"])).toBe(true);
    expect(files.env).toEqual([
      "SSL_CERT_FILE=/etc/agent-computer/egress/bundle.pem",
      "CURL_CA_BUNDLE=/etc/agent-computer/egress/bundle.pem",
      "REQUESTS_CA_BUNDLE=/etc/agent-computer/egress/bundle.pem",
      "GIT_SSL_CAINFO=/etc/agent-computer/egress/bundle.pem",
      "NODE_EXTRA_CA_CERTS=/etc/agent-computer/egress/ca.pem",
    ]);
  });
});
