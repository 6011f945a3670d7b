import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { EgressPolicy } from "@agent-computer/core";
import type { EgressClientPolicy } from "./egress-proxy.js";
import { EgressRules, type EgressRulesOptions } from "./egress-rules.js";

/**
 * What a policy file of a shared proxy holds: one per network the proxy
 * serves, named after the proxy's own address on that network
 * (`<address>.json`), so a connection's local address finds its computer's
 * policy and nothing the computer sends can choose another.
 */
export interface EgressPolicyFile {
  readonly computerId?: string;
  readonly policy: EgressPolicy;
  /** `EgressClientPolicy.loopbackVia`: the SOCKS5 server that opens the computer's loopback. */
  readonly loopbackVia?: { readonly host: string; readonly port: number };
}

/** The file name of the policy served on the proxy's address `localAddress`. */
export function policyFileName(localAddress: string): string {
  return `${localAddress.replace(/^::ffff:/, "")}.json`;
}

/**
 * Looks a connection's policy up in `dir` (read at each new connection, so
 * a computer provisioned after the proxy started is served at once). A
 * missing or broken file gives no policy: the proxy then refuses, never
 * lets through.
 */
export function policyDirectory(
  dir: string,
  options: EgressRulesOptions = {},
): (client: { readonly localAddress: string }) => Promise<EgressClientPolicy | undefined> {
  // Checked policies by the file's text: a connection costs a read, not a schema check.
  const checked = new Map<string, EgressClientPolicy>();
  return async ({ localAddress }) => {
    try {
      // Read at once, not through libuv's thread pool: its four hand-offs per read were a measurable part
      // of a new connection's added latency on a loaded host (bench/egress.bench.ts of provider-docker).
      const text = readFileSync(join(dir, policyFileName(localAddress)), "utf8");
      let policy = checked.get(text);
      if (!policy) {
        const file = JSON.parse(text) as EgressPolicyFile;
        policy = {
          rules: new EgressRules(file.policy, options),
          computerId: file.computerId,
          ...(file.loopbackVia ? { loopbackVia: file.loopbackVia } : {}),
        };
        if (checked.size >= 4_096) checked.clear();
        checked.set(text, policy);
      }
      return policy;
    } catch {
      return undefined;
    }
  };
}
