import tls from "node:tls";
import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { issueInterceptionCertificates } from "./interception-certificates.js";
import type { EgressCredentialsFile } from "./policy-directory.js";

// What a computer whose policy names credentials is given, on every
// provider that runs this proxy (provider-docker writes it to files of its
// data folder, provider-kubernetes into a Secret): the proxy's side, which
// holds the values and the proxy's key and never enters the computer, and
// the computer's side, which is public (its CA and a bundle with it) and
// the variables that make its programs trust it.

/** Where the computer finds its CA (read-only), the same path on every provider. */
export const EGRESS_CA_DIR = "/etc/agent-computer/egress";
/** The computer's CA certificate, in `EGRESS_CA_DIR`. */
export const EGRESS_CA_FILE = "ca.pem";
/** Node's bundled roots and the computer's CA, in `EGRESS_CA_DIR`: for clients that read one bundle in place of the system's. */
export const EGRESS_CA_BUNDLE_FILE = "bundle.pem";

/** A credentialed computer's files, both sides. */
export interface ComputerCredentialFiles {
  /** The proxy's file (`EgressCredentialsFile` as JSON): the credentials' values and the proxy's key. A secret. */
  readonly credentialsFile: string;
  /** The computer's files for `EGRESS_CA_DIR`, by name: public. */
  readonly computerFiles: Readonly<Record<typeof EGRESS_CA_FILE | typeof EGRESS_CA_BUNDLE_FILE, string>>;
  /** The computer's variables (`NAME=value`) pointing its programs at those files. */
  readonly env: readonly string[];
}

/**
 * Makes a computer's CA (interception-certificates.ts: it signs the
 * proxy's certificate for the credentials' hosts and its key is dropped at
 * once) and the files both sides get. Covered by the variables: curl,
 * OpenSSL-based programs, Python requests, git, Node; not Chromium's or
 * Firefox's NSS store, nor Java's (provider-docker README, "Egress by policy").
 */
export function computerCredentialFiles(
  computerId: string,
  credentials: ResolvedEgressPolicy["credentials"],
): ComputerCredentialFiles {
  const issued = issueInterceptionCertificates(
    computerId,
    credentials.map((credential) => credential.host),
  );
  const file: EgressCredentialsFile = { credentials, certificate: issued.certificate, key: issued.key };
  const bundle = `${EGRESS_CA_DIR}/${EGRESS_CA_BUNDLE_FILE}`;
  return {
    credentialsFile: JSON.stringify(file),
    computerFiles: {
      [EGRESS_CA_FILE]: issued.caCertificate,
      [EGRESS_CA_BUNDLE_FILE]: `${tls.rootCertificates.join("\n")}\n${issued.caCertificate}`,
    },
    env: [
      `SSL_CERT_FILE=${bundle}`,
      `CURL_CA_BUNDLE=${bundle}`,
      `REQUESTS_CA_BUNDLE=${bundle}`,
      `GIT_SSL_CAINFO=${bundle}`,
      `NODE_EXTRA_CA_CERTS=${EGRESS_CA_DIR}/${EGRESS_CA_FILE}`,
    ],
  };
}
