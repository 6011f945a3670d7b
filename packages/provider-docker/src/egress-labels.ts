/**
 * Labels of egress by policy (README, "Egress by policy"): the shared proxy
 * carries `proxy` (the provider's data folder it serves); a computer with a
 * policy carries `policy` (its name) and `network` (its internal network,
 * the one it shares with the proxy, and later its display); that network
 * carries `networkPolicy`, the policy file's JSON, and `networkProxy`, the
 * proxy's name, so a proxy made again rejoins every network of its own data
 * folder (never another folder's: two proxies answering `egress-proxy` on
 * one network would split the computer's requests between two policies'
 * resolvers) and serves each its own policy.
 */
export const EGRESS_LABELS = {
  proxy: "agent-computer.org/egress-proxy",
  policy: "agent-computer.org/egress-policy",
  networkPolicy: "agent-computer.org/egress-network-policy",
  /** On that network: the name of the proxy that serves it (one per data folder). */
  networkProxy: "agent-computer.org/egress-network-proxy",
} as const;

/** The name the proxy answers to on every computer's network (the computer's HTTP_PROXY names it). */
export const EGRESS_PROXY_ALIAS = "egress-proxy";
/** The port the proxy listens on. */
export const EGRESS_PROXY_PORT = 3128;

/**
 * The computer's environment with a policy: for convenience only (curl,
 * pip, npm, git find the proxy); unsetting them takes nothing away, since
 * the computer's network has no other way out.
 */
export const EGRESS_PROXY_ENV: readonly string[] = (() => {
  const proxy = `http://${EGRESS_PROXY_ALIAS}:${EGRESS_PROXY_PORT}`;
  const direct = "localhost,127.0.0.1,::1";
  return [
    `HTTP_PROXY=${proxy}`,
    `http_proxy=${proxy}`,
    `HTTPS_PROXY=${proxy}`,
    `https_proxy=${proxy}`,
    `NO_PROXY=${direct}`,
    `no_proxy=${direct}`,
  ];
})();

/**
 * What a fenced computer's display adds to its Chromium's managed policy
 * (which wins over the command line's proxy flags): every URL, loopback
 * included (`<-loopback>`), goes to the egress proxy, which sends loopback
 * ones to the computer's loopback and judges the rest; WebRTC sends no UDP
 * that does not go through the proxy (so none: the proxy carries TCP).
 */
export const EGRESS_CHROMIUM_POLICY = Object.freeze({
  ProxySettings: {
    ProxyMode: "fixed_servers",
    ProxyServer: `${EGRESS_PROXY_ALIAS}:${EGRESS_PROXY_PORT}`,
    ProxyBypassList: "<-loopback>",
  },
  WebRtcIPHandling: "disable_non_proxied_udp",
});
