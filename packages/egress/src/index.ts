export { AddressRules, METADATA_ADDRESSES } from "@agent-computer/core/provider-utils";
export {
  type ComputerCredentialFiles,
  computerCredentialFiles,
  EGRESS_CA_BUNDLE_FILE,
  EGRESS_CA_DIR,
  EGRESS_CA_FILE,
} from "./computer-credential-files.js";
export {
  denialLineReader,
  denialOfLine,
  EGRESS_PROXY_PORT,
  egressChromiumPolicy,
  egressProxyEnv,
} from "./computer-proxy-settings.js";
export {
  type CredentialHeader,
  type EgressCredentials,
  egressCredentials,
  headersWithCredential,
} from "./credential-injection.js";
export { EgressDenialListeners } from "./egress-denial-listeners.js";
export {
  createEgressProxy,
  EGRESS_REFUSAL_HEADER,
  type EgressClientPolicy,
  type EgressProxyOptions,
  refusalText,
} from "./egress-proxy.js";
export { type EgressDenial, type EgressRefusalReason, REFUSAL_TEXT } from "./egress-refusal.js";
export {
  cachingResolver,
  EgressRules,
  type EgressRulesOptions,
  type EgressVerdict,
  type HostResolver,
  systemResolver,
} from "./egress-rules.js";
export { hostMatchesAny, isLoopbackHost, normalizeHost } from "./host-pattern.js";
export { type InterceptionCertificates, issueInterceptionCertificates } from "./interception-certificates.js";
export {
  type EgressCredentialsFile,
  type EgressPolicyFile,
  type PolicyDirectoryOptions,
  policyDirectory,
  policyFileName,
} from "./policy-directory.js";
export { egressProxyScriptPath } from "./proxy-script.js";
export { connectThroughSocks5 } from "./socks5-connect.js";
