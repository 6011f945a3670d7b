import { readFile } from "node:fs/promises";
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
  return async ({ localAddress }) => {
    try {
      const file = JSON.parse(await readFile(join(dir, policyFileName(localAddress)), "utf8")) as EgressPolicyFile;
      return { rules: new EgressRules(file.policy, options), computerId: file.computerId };
    } catch {
      return undefined;
    }
  };
}
