import { readFileSync } from "node:fs";
import { createEgressProxy } from "./egress-proxy.js";
import { cachingResolver, systemResolver } from "./egress-rules.js";
import { policyDirectory } from "./policy-directory.js";

// The proxy as a container runs it (provider-docker's shared egress proxy):
// `node proxy-server.cjs <config.json>`. Its denials go to stdout as one JSON
// line each, `{"egressDenied":{...}}`, which the provider follows.

interface ProxyConfig {
  readonly port: number;
  /** Where the policy files are, one per network served (policy-directory.ts). */
  readonly policiesDir: string;
  /** The Docker host's addresses, refused like private ones. */
  readonly hostAddresses?: string[];
}

const config = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as ProxyConfig;
const server = createEgressProxy({
  policyFor: policyDirectory(config.policiesDir, {
    hostAddresses: config.hostAddresses ?? [],
    resolve: cachingResolver(systemResolver),
  }),
  onDenied: (denial) => process.stdout.write(`${JSON.stringify({ egressDenied: denial })}\n`),
});
server.listen(config.port, "0.0.0.0", () => process.stdout.write(`${JSON.stringify({ listening: config.port })}\n`));
const close = () => server.close(() => process.exit(0));
process.on("SIGTERM", close);
process.on("SIGINT", close);
