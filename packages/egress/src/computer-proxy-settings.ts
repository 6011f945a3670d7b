import type { EgressDenial } from "./egress-refusal.js";

// What a fenced computer's programs are given to find its egress proxy, and
// how a provider reads the proxy's reports: the same for every provider
// that runs this proxy (provider-docker, provider-kubernetes), so it lives
// here once.

/** The port the proxy listens on, wherever it runs. */
export const EGRESS_PROXY_PORT = 3128;

/**
 * The computer's environment with a policy, the proxy at `proxyUrl`
 * (`http://host:port`): for convenience only (curl, pip, npm, git find the
 * proxy); unsetting them takes nothing away, since the fence holds below
 * them. Loopback goes direct.
 */
export function egressProxyEnv(proxyUrl: string): string[] {
  const direct = "localhost,127.0.0.1,::1";
  return [
    `HTTP_PROXY=${proxyUrl}`,
    `http_proxy=${proxyUrl}`,
    `HTTPS_PROXY=${proxyUrl}`,
    `https_proxy=${proxyUrl}`,
    `NO_PROXY=${direct}`,
    `no_proxy=${direct}`,
  ];
}

/**
 * What a fenced computer's display adds to its Chromium's managed policy
 * (which wins over the command line's proxy flags): every URL goes to the
 * proxy at `proxyServer` (`host:port`); with `loopbackToProxy`, loopback
 * ones too (`<-loopback>`: where the display's loopback is not the
 * computer's, the proxy sends them on to it); WebRTC sends no UDP that
 * does not go through the proxy (so none: the proxy carries TCP).
 */
export function egressChromiumPolicy(proxyServer: string, { loopbackToProxy }: { loopbackToProxy: boolean }) {
  return Object.freeze({
    ProxySettings: {
      ProxyMode: "fixed_servers",
      ProxyServer: proxyServer,
      ...(loopbackToProxy ? { ProxyBypassList: "<-loopback>" } : {}),
    },
    WebRtcIPHandling: "disable_non_proxied_udp",
  });
}

/**
 * The denial a line of the proxy's output reports (proxy-main.ts writes
 * `{"egressDenied":{...}}` per refusal), or undefined for any other line.
 */
export function denialOfLine(line: string): EgressDenial | undefined {
  try {
    const parsed = JSON.parse(line) as { egressDenied?: EgressDenial };
    return parsed.egressDenied && typeof parsed.egressDenied === "object" ? parsed.egressDenied : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A reader of the proxy's output as it arrives in pieces (a log stream):
 * each complete line that reports a denial goes to `onDenied`; a line cut
 * between two pieces waits for its end.
 */
export function denialLineReader(onDenied: (denial: EgressDenial) => void): (text: string) => void {
  let partial = "";
  return (text) => {
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const denial = denialOfLine(line);
      if (denial) onDenied(denial);
    }
  };
}
