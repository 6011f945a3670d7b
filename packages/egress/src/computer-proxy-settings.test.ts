import { describe, expect, it } from "vitest";
import { denialLineReader, denialOfLine, egressChromiumPolicy, egressProxyEnv } from "./computer-proxy-settings.js";

// What every provider running the proxy shares (provider-docker,
// provider-kubernetes): the proxy variables, the display's Chromium
// policy, and reading the proxy's denial lines (proxy-main.ts writes them).
describe("computer proxy settings", () => {
  it("reads a denial line as proxy-main writes it, and nothing from its other lines", () => {
    const denial = { policy: "p", host: "example.com", port: 443, reason: "not-allowed", at: 1 };
    expect(denialOfLine(JSON.stringify({ egressDenied: denial }))).toEqual(denial);
    expect(denialOfLine(JSON.stringify({ listening: 3128 }))).toBeUndefined();
    expect(denialOfLine("not json")).toBeUndefined();
    expect(denialOfLine(JSON.stringify({ egressDenied: "text" }))).toBeUndefined();
  });

  it("reads denial lines cut across the pieces a log stream delivers", () => {
    const heard: string[] = [];
    const read = denialLineReader((denial) => heard.push(denial.host));
    const line = (host: string) =>
      `${JSON.stringify({ egressDenied: { policy: "p", host, port: 80, reason: "not-allowed", at: 1 } })}\n`;
    const both = `${line("a.example")}{"listening":3128}\n${line("b.example")}`;
    read(both.slice(0, 20));
    read(both.slice(20, -5));
    expect(heard).toEqual(["a.example"]);
    read(both.slice(-5));
    expect(heard).toEqual(["a.example", "b.example"]);
  });

  it("sends loopback URLs to the proxy only where the display's loopback is not the computer's", () => {
    expect(egressChromiumPolicy("egress-proxy:3128", { loopbackToProxy: true }).ProxySettings).toEqual({
      ProxyMode: "fixed_servers",
      ProxyServer: "egress-proxy:3128",
      ProxyBypassList: "<-loopback>",
    });
    const inPod = egressChromiumPolicy("127.0.0.1:3128", { loopbackToProxy: false });
    expect(inPod.ProxySettings).not.toHaveProperty("ProxyBypassList");
    expect(inPod.WebRtcIPHandling).toBe("disable_non_proxied_udp");
  });

  it("names the proxy in both spellings of each variable and keeps loopback direct", () => {
    const env = egressProxyEnv("http://127.0.0.1:3128");
    for (const name of ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"])
      expect(env).toContain(`${name}=http://127.0.0.1:3128`);
    expect(env).toContain("NO_PROXY=localhost,127.0.0.1,::1");
  });
});
