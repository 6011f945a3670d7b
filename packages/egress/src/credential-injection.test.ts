import http from "node:http";
import https from "node:https";
import type net from "node:net";
import type { AddressInfo } from "node:net";
import tls from "node:tls";
import { AgentComputerError } from "@agent-computer/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { egressCredentials } from "./credential-injection.js";
import { createEgressProxy } from "./egress-proxy.js";
import { EgressRules } from "./egress-rules.js";
import { issueInterceptionCertificates } from "./interception-certificates.js";

// The proxy adding a credential, in process: a real HTTPS upstream on
// loopback with its own CA (which only the proxy trusts), a client that
// trusts only the computer's CA, as a program in a fenced computer does.
const TOKEN = "Bearer secret-token-value";
const upstreamTls = issueInterceptionCertificates("upstream", ["api.test", "other.test"]);
const computerTls = issueInterceptionCertificates("computer", ["api.test"]);
let upstream: https.Server;
let proxy: http.Server;
let proxyPort = 0;
let upstreamPort = 0;
const opened = new Set<net.Socket>();

beforeAll(async () => {
  upstream = https.createServer({ cert: upstreamTls.certificate, key: upstreamTls.key }, (request, response) =>
    response.end(JSON.stringify({ authorization: request.headers.authorization ?? null })),
  );
  await new Promise<void>((done) => upstream.listen(0, "127.0.0.1", done));
  upstreamPort = (upstream.address() as AddressInfo).port;
  const policy = { name: "creds", allowPrivate: ["127.0.0.1/32"] };
  const rules = new EgressRules(policy, { resolve: async () => ["127.0.0.1"] });
  const credentials = egressCredentials([{ host: "api.test", header: { name: "Authorization", value: TOKEN } }], {
    certificate: computerTls.certificate,
    key: computerTls.key,
  });
  proxy = createEgressProxy({ policyFor: () => ({ rules, credentials }), upstreamCa: [upstreamTls.caCertificate] });
  // CONNECT's sockets leave the server's bookkeeping: kept here to end them at the close.
  proxy.on("connection", (socket: net.Socket) => opened.add(socket));
  await new Promise<void>((done) => proxy.listen(0, "127.0.0.1", done));
  proxyPort = (proxy.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const socket of opened) socket.destroy();
  for (const server of [proxy, upstream]) server.closeAllConnections();
  for (const server of [proxy, upstream]) await new Promise((done) => server.close(done));
});

/** GET https://host/ through the proxy's CONNECT, trusting only `ca`. */
function getThroughProxy(host: string, ca: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .request({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: `${host}:${upstreamPort}` })
      .on("connect", (_, socket) => {
        https
          .get(
            {
              host,
              port: upstreamPort,
              path: "/",
              headers: { ...headers, connection: "close" },
              createConnection: () => tls.connect({ socket, servername: host, ca }),
            },
            (reply) => {
              let body = "";
              reply.on("data", (chunk) => {
                body += chunk;
              });
              reply.on("end", () => resolve(body));
            },
          )
          .on("error", reject);
      })
      .on("error", reject)
      .end();
  });
}

describe("credentials added on the way out", () => {
  it("terminates a named host's tunnel with the computer's CA and adds the header, replacing the program's", async () => {
    const body = await getThroughProxy("api.test", computerTls.caCertificate, { authorization: "Bearer mine" });
    expect(JSON.parse(body)).toEqual({ authorization: TOKEN });
  });

  it("tunnels a host not named untouched: its own certificate, no header", async () => {
    const body = await getThroughProxy("other.test", upstreamTls.caCertificate);
    expect(JSON.parse(body)).toEqual({ authorization: null });
    await expect(getThroughProxy("other.test", computerTls.caCertificate)).rejects.toThrow();
    // The named host's tunnel is the proxy's: the upstream's CA alone does not vouch for it.
    await expect(getThroughProxy("api.test", upstreamTls.caCertificate)).rejects.toThrow();
  });

  it("refuses a bad credential without echoing its value", () => {
    const attempt = () =>
      new EgressRules({
        credentials: [{ host: "api.test", header: { name: "authorization", value: "line\nbreak-secret" } }],
      });
    expect(attempt).toThrow(AgentComputerError);
    try {
      attempt();
    } catch (error) {
      expect(JSON.stringify(error) + String(error)).not.toContain("break-secret");
    }
  });
});
