import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type EgressPolicy, egressPolicySchema, parseInput } from "@agent-computer/core";
import { egressCredentials } from "./credential-injection.js";
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
  /**
   * The name of the computer's credentials file (`EgressCredentialsFile`)
   * in the directory's `credentialsDir`: kept apart from the policy, whose
   * text also goes where secrets must not (provider-docker writes it into a
   * network's label). Its `policy.credentials` is then left empty.
   */
  readonly credentialsFile?: string;
}

/** The credentials of one computer and the proxy's TLS identity for their hosts (interception-certificates.ts). */
export interface EgressCredentialsFile {
  readonly credentials: EgressPolicy["credentials"];
  readonly certificate: string;
  readonly key: string;
}

export interface PolicyDirectoryOptions extends EgressRulesOptions {
  /** Where `EgressPolicyFile.credentialsFile` names a file; without it, a policy that names one is refused. */
  readonly credentialsDir?: string;
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
  options: PolicyDirectoryOptions = {},
): (client: { readonly localAddress: string }) => Promise<EgressClientPolicy | undefined> {
  // Checked policies by the file's text: a connection costs a read, not a schema check.
  const checked = new Map<string, EgressClientPolicy>();
  return async ({ localAddress }) => {
    try {
      // Read at once, not through libuv's thread pool: its four hand-offs per read were a measurable part
      // of a new connection's added latency on a loaded host (bench/egress.bench.ts of provider-docker).
      const text = readFileSync(join(dir, policyFileName(localAddress)), "utf8");
      const file = JSON.parse(text) as EgressPolicyFile;
      const secrets = file.credentialsFile ? credentialsText(options.credentialsDir, file.credentialsFile) : "";
      const key = `${text}\n${secrets}`;
      let policy = checked.get(key);
      if (!policy) {
        policy = {
          rules: new EgressRules(file.policy, options),
          computerId: file.computerId,
          ...(file.loopbackVia ? { loopbackVia: file.loopbackVia } : {}),
          ...(secrets ? { credentials: credentialsOf(secrets) } : {}),
        };
        if (checked.size >= 4_096) checked.clear();
        checked.set(key, policy);
      }
      return policy;
    } catch {
      return undefined;
    }
  };
}

function credentialsText(dir: string | undefined, name: string): string {
  if (!dir || !/^[A-Za-z0-9._-]{1,128}$/.test(name) || name.startsWith(".")) throw new Error("no credentials file");
  return readFileSync(join(dir, name), "utf8");
}

function credentialsOf(text: string) {
  const file = JSON.parse(text) as EgressCredentialsFile;
  const { credentials } = parseInput(egressPolicySchema, { credentials: file.credentials }, "EgressCredentialsFile");
  return egressCredentials(credentials, file);
}
