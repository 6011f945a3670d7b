import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

/** What a computer's credential hosts need on both sides: the CA it trusts, and the proxy's certificate and key. */
export interface InterceptionCertificates {
  /** The computer's own CA, PEM: what the computer trusts (its private key was thrown away once it signed). */
  readonly caCertificate: string;
  /** The proxy's certificate for every named host (one subjectAltName each), signed by that CA, PEM. */
  readonly certificate: string;
  /** Its private key, PEM: the proxy's only, never the computer's. */
  readonly key: string;
}

const DAY_MS = 86_400_000;

/**
 * Makes a computer's CA and, at once, the one certificate the proxy shows
 * for the hosts it adds credentials to (README, "Credentials added on the
 * way out"). The hosts are known at provision, so the CA signs here and its
 * key is dropped: no file anywhere can sign another certificate the
 * computer would trust. The CA is limited to server certificates
 * (extKeyUsage serverAuth) and to no sub-CA (pathLen 0). Node can make
 * keys but not X.509 certificates; node-forge writes them.
 */
export function issueInterceptionCertificates(computerId: string, hosts: readonly string[]): InterceptionCertificates {
  const caKeys = rsaKeyPair();
  const ca = certificateShell(caKeys.publicKey, 3650);
  const caName = [
    { name: "commonName", value: `agent-computer egress CA ${computerId}`.slice(0, 64) },
    { name: "organizationName", value: "agent-computer" },
  ];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const leafKeys = rsaKeyPair();
  const leaf = certificateShell(leafKeys.publicKey, 825);
  leaf.setSubject([{ name: "commonName", value: hosts[0] ?? "egress-proxy" }]);
  leaf.setIssuer(caName);
  leaf.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: hosts.map((host) => ({ type: 2, value: host })) },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  leaf.sign(caKeys.privateKey, forge.md.sha256.create());
  return {
    caCertificate: forge.pki.certificateToPem(ca),
    certificate: forge.pki.certificateToPem(leaf),
    key: forge.pki.privateKeyToPem(leafKeys.privateKey),
  };
}

/** RSA 2048 from Node's own generator (native, tens of milliseconds), in node-forge's form. */
function rsaKeyPair() {
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  const forgeKey = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e) };
}

function certificateShell(publicKey: forge.pki.PublicKey, days: number): forge.pki.Certificate {
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = publicKey;
  // A positive serial (first bit clear), random so two computers' certificates never share one.
  certificate.serialNumber = `0${randomBytes(15).toString("hex")}`;
  const now = Date.now();
  certificate.validity.notBefore = new Date(now - DAY_MS);
  certificate.validity.notAfter = new Date(now + days * DAY_MS);
  return certificate;
}
