import { readFileSync } from "node:fs";
import tls from "node:tls";
import { createEgressProxy } from "./egress-proxy.js";
import { cachingResolver, systemResolver } from "./egress-rules.js";
import { policyDirectory } from "./policy-directory.js";

// The proxy as a container runs it (provider-docker's shared egress proxy):
// `node proxy-server.cjs <config.json>`. Its denials go to stdout as one JSON
// line each, `{"egressDenied":{...}}`, which the provider follows.

interface ProxyConfig {
  readonly port: number;
  /**
   * The address to listen on. Default 0.0.0.0 (provider-docker's shared
   * proxy, reached on each computer's network); 127.0.0.1 for a proxy inside
   * the computer's own network namespace (provider-kubernetes' egress
   * container), which must not serve the pod's address to the cluster.
   */
  readonly host?: string;
  /** Where the policy files are, one per network served (policy-directory.ts). */
  readonly policiesDir: string;
  /** The Docker host's addresses, refused like private ones. */
  readonly hostAddresses?: string[];
  /** Where the computers' credentials files are (policy-directory.ts, `credentialsFile`). */
  readonly credentialsDir?: string;
  /**
   * PEM files of CAs trusted besides Node's roots when the proxy re-encrypts
   * to a credential's host (an operator's internal CA; a test's fixture CA).
   */
  readonly extraUpstreamCaFiles?: string[];
}

const config = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as ProxyConfig;
const server = createEgressProxy({
  policyFor: policyDirectory(config.policiesDir, {
    hostAddresses: config.hostAddresses ?? [],
    resolve: cachingResolver(systemResolver),
    ...(config.credentialsDir ? { credentialsDir: config.credentialsDir } : {}),
  }),
  upstreamCa: [
    ...tls.rootCertificates,
    ...(config.extraUpstreamCaFiles ?? []).map((file) => readFileSync(file, "utf8")),
  ],
  onDenied: (denial) => process.stdout.write(`${JSON.stringify({ egressDenied: denial })}\n`),
});
server.listen(config.port, config.host ?? "0.0.0.0", () =>
  process.stdout.write(`${JSON.stringify({ listening: config.port })}\n`),
);
const close = () => server.close(() => process.exit(0));
process.on("SIGTERM", close);
process.on("SIGINT", close);
