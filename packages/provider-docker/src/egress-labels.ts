import { egressChromiumPolicy, egressProxyEnv, EGRESS_PROXY_PORT as SHARED_PROXY_PORT } from "@agent-computer/egress";

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
/** The port the proxy listens on (@agent-computer/egress's, the same on every provider). */
export const EGRESS_PROXY_PORT = SHARED_PROXY_PORT;

/**
 * The computer's environment with a policy (@agent-computer/egress's
 * `egressProxyEnv`): for convenience only, since the computer's network
 * has no other way out.
 */
export const EGRESS_PROXY_ENV: readonly string[] = egressProxyEnv(`http://${EGRESS_PROXY_ALIAS}:${EGRESS_PROXY_PORT}`);

/**
 * What a fenced computer's display adds to its Chromium's managed policy:
 * every URL, loopback included, goes to the egress proxy, which sends
 * loopback ones to the computer's loopback (the display's own is not the
 * computer's) and judges the rest; no WebRTC UDP.
 */
export const EGRESS_CHROMIUM_POLICY = egressChromiumPolicy(`${EGRESS_PROXY_ALIAS}:${EGRESS_PROXY_PORT}`, {
  loopbackToProxy: true,
});
