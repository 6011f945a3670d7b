import http from "node:http";
import type net from "node:net";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { endToEndHeaders } from "@agent-computer/core/provider-utils";
import {
  type CredentialHeader,
  type EgressCredentials,
  headersWithCredential,
  TunnelInterceptor,
} from "./credential-injection.js";
import type { EgressDenial, EgressRefusalReason } from "./egress-refusal.js";
import { REFUSAL_TEXT } from "./egress-refusal.js";
import type { EgressRules } from "./egress-rules.js";
import { isLoopbackHost, normalizeHost } from "./host-pattern.js";
import { connectThroughSocks5 } from "./socks5-connect.js";
import { connectTunnelUpstream } from "./tunnel-upstream.js";

/** The rules a client's requests are judged by, and whose computer they are (for the denial's report). */
export interface EgressClientPolicy {
  readonly rules: EgressRules;
  readonly computerId?: string;
  /**
   * A SOCKS5 server that opens the client's computer's loopback (its
   * loopback proxy): loopback destinations (`localhost`, 127/8, ::1) go
   * there, whatever the rules say, instead of being refused. This is how a
   * display's browser, whose every URL comes to the proxy, still loads
   * pages its bot serves on its computer's `localhost` (provider-docker
   * README, "Egress by policy"). Absent: loopback is refused like any
   * private address.
   */
  readonly loopbackVia?: { readonly host: string; readonly port: number };
  /**
   * The headers this client's requests get on the way out, by host
   * (credential-injection.ts): added to plain HTTP, and to HTTPS by
   * terminating CONNECT tunnels to those hosts only.
   */
  readonly credentials?: EgressCredentials;
}

export interface EgressProxyOptions {
  /**
   * The policy of a client connection, looked up once per connection from
   * the address it came from and the proxy's address it reached (a shared
   * proxy tells computers apart by the network they reach it on).
   * Undefined: every request on that connection is refused (`no-policy`).
   */
  readonly policyFor: (client: {
    readonly localAddress: string;
    readonly remoteAddress: string;
  }) => EgressClientPolicy | undefined | Promise<EgressClientPolicy | undefined>;
  /** Called once per refused request; its failure is ignored (a refusal never waits on a report). */
  readonly onDenied?: (denial: EgressDenial) => void;
  /**
   * The CAs a host named in a credential must prove itself with when the
   * proxy re-encrypts to it. Default: Node's bundled roots (`tls.rootCertificates`).
   */
  readonly upstreamCa?: readonly string[];
}

/** Marks a refusal as the proxy's, so a program can tell it from a 403 of the site. */
export const EGRESS_REFUSAL_HEADER = "x-agent-computer-egress";

/**
 * An HTTP forward proxy with CONNECT tunnels (TLS terminated only for
 * the hosts a client's credentials name) that
 * lets each request through only where its client's policy allows the
 * destination, connecting to the very address it judged. A refusal is an
 * HTTP 403 whose body names the policy, the host and the reason, and one
 * call of `onDenied`. Listen on it with `server.listen`.
 */
export function createEgressProxy(options: EgressProxyOptions): http.Server {
  // Upstream connections are kept and reused per resolved address, so a client's keep-alive costs no new handshake.
  const upstreamAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const interceptor = new TunnelInterceptor(options.upstreamCa ?? tls.rootCertificates);
  const policies = new WeakMap<net.Socket, Promise<EgressClientPolicy | undefined>>();
  const policyOf = (socket: net.Socket) => {
    let found = policies.get(socket);
    if (!found) {
      found = Promise.resolve(
        options.policyFor({ localAddress: socket.localAddress ?? "", remoteAddress: socket.remoteAddress ?? "" }),
      ).catch(() => undefined);
      policies.set(socket, found);
    }
    return found;
  };
  const report = (denial: Omit<EgressDenial, "at">) => {
    try {
      options.onDenied?.({ ...denial, at: Date.now() });
    } catch {
      // A failing report never turns a refusal into something else.
    }
  };

  const server = http.createServer({ keepAlive: true }, (request, response) => {
    forward(request, response).catch((error: Error) => {
      if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
      response.end(`egress proxy: ${error.message}\n`);
    });
  });

  async function forward(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const policy = await policyOf(request.socket);
    const target = absoluteHttpUrl(request.url ?? "");
    if (!policy || !target) {
      const reason = policy ? "bad-request" : "no-policy";
      const host = target?.hostname ?? request.headers.host ?? "";
      report({ policy: policy?.rules.name ?? "none", host, port: Number(target?.port || 80), reason });
      return refuseResponse(response, policy?.rules.name ?? "none", host, reason);
    }
    const port = Number(target.port || 80);
    const loopback = loopbackRoute(policy, target.hostname);
    if (loopback) {
      const socket = await connectThroughSocks5(loopback, normalizeHost(target.hostname), port);
      // Paused by connectThroughSocks5 until someone reads: the request's parser reads from here on.
      return relay(request, response, { createConnection: () => socket.resume() }, target, port, undefined);
    }
    const verdict = await policy.rules.judge(target.hostname);
    if (!verdict.allowed) {
      report({ ...denialOf(policy, verdict.host, port, verdict.reason), address: verdict.address });
      return refuseResponse(response, policy.rules.name, verdict.host, verdict.reason);
    }
    const credential = policy.credentials?.headerFor(verdict.host);
    return relay(request, response, { host: verdict.address, agent: upstreamAgent }, target, port, credential);
  }

  /** Sends the client's request on and its answer back, over `via` (an address, or a socket already open). */
  function relay(
    request: http.IncomingMessage,
    response: http.ServerResponse,
    via: http.RequestOptions,
    target: URL,
    port: number,
    credential: CredentialHeader | undefined,
  ): void {
    const upstream = http.request({
      ...via,
      port,
      method: request.method,
      path: `${target.pathname}${target.search}`,
      headers: headersWithCredential(request.headers, target.host, credential),
      setHost: false,
    });
    upstream.on("response", (answer) => {
      const headers = endToEndHeaders(answer.headers);
      if (answer.statusMessage) response.writeHead(answer.statusCode ?? 502, answer.statusMessage, headers);
      else response.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(response);
    });
    upstream.on("error", (error) => {
      if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
      response.end(`egress proxy: ${target.hostname}:${port} did not answer (${error.message})\n`);
    });
    request.pipe(upstream);
  }

  server.on("connect", (request: http.IncomingMessage, client: Duplex, head: Buffer) => {
    tunnel(request, client as net.Socket, head).catch(() => client.destroy());
  });

  async function tunnel(request: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const policy = await policyOf(client);
    const target = connectTarget(request.url ?? "");
    if (!policy || !target) {
      const reason = policy ? "bad-request" : "no-policy";
      report({ policy: policy?.rules.name ?? "none", host: target?.host ?? "", port: target?.port ?? 0, reason });
      return refuseTunnel(client, policy?.rules.name ?? "none", target?.host ?? "", reason);
    }
    const loopback = loopbackRoute(policy, target.host);
    if (loopback) {
      const opened = await connectThroughSocks5(loopback, normalizeHost(target.host), target.port).catch(
        (error: Error) => error,
      );
      if (opened instanceof Error) {
        client.end(
          plainAnswer(502, `egress proxy: ${target.host}:${target.port} did not answer (${opened.message})\n`),
        );
        return;
      }
      return splice(client, opened, head);
    }
    const verdict = await policy.rules.judge(target.host);
    if (!verdict.allowed) {
      report({ ...denialOf(policy, verdict.host, target.port, verdict.reason), address: verdict.address });
      return refuseTunnel(client, policy.rules.name, verdict.host, verdict.reason);
    }
    const credential = policy.credentials?.headerFor(verdict.host);
    if (credential && policy.credentials) {
      const intercepted = { host: verdict.host, address: verdict.address, port: target.port, credential };
      return interceptor.intercept(client, head, intercepted, policy.credentials.serverContext);
    }
    const upstream = connectTunnelUpstream(verdict.address, target.port, client);
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    upstream.once("connect", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
    });
    upstream.on("error", (error) => {
      if (upstream.connecting) {
        client.end(
          plainAnswer(502, `egress proxy: ${verdict.host}:${target.port} did not answer (${error.message})\n`),
        );
      } else client.destroy();
    });
    client.on("close", () => upstream.destroy());
  }

  server.on("close", () => {
    upstreamAgent.destroy();
    interceptor.close();
  });
  return server;
}

/** Joins a client to an upstream socket already open, after telling the client the tunnel is there. */
function splice(client: net.Socket, upstream: net.Socket, head: Buffer): void {
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length > 0) upstream.write(head);
  upstream.pipe(client);
  client.pipe(upstream);
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
}

/** Where a loopback destination goes for this client: its computer's loopback, or nowhere special (undefined). */
function loopbackRoute(policy: EgressClientPolicy, host: string) {
  return policy.loopbackVia && isLoopbackHost(normalizeHost(host)) ? policy.loopbackVia : undefined;
}

function denialOf(policy: EgressClientPolicy, host: string, port: number, reason: EgressRefusalReason) {
  return {
    policy: policy.rules.name,
    host,
    port,
    reason,
    ...(policy.computerId ? { computerId: policy.computerId } : {}),
  };
}

/** The refusal's text: the policy, the host and why, in one line a person and a program can read. */
export function refusalText(policy: string, host: string, reason: EgressRefusalReason): string {
  return `Refused by the egress policy "${policy}": ${host || "(no host)"} ${REFUSAL_TEXT[reason]} (${reason}).\n`;
}

function refuseResponse(response: http.ServerResponse, policy: string, host: string, reason: EgressRefusalReason) {
  const body = refusalText(policy, host, reason);
  response.writeHead(403, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    [EGRESS_REFUSAL_HEADER]: reason,
  });
  response.end(body);
}

function refuseTunnel(client: net.Socket, policy: string, host: string, reason: EgressRefusalReason) {
  client.end(plainAnswer(403, refusalText(policy, host, reason), { [EGRESS_REFUSAL_HEADER]: reason }));
}

function plainAnswer(status: 403 | 502, body: string, extra: Record<string, string> = {}): string {
  const headers = {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(body)),
    Connection: "close",
    ...extra,
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${lines.join("")}\r\n${body}`;
}

/** A forward proxy's request target: an absolute http URL; anything else is not ours to forward. */
function absoluteHttpUrl(raw: string): URL | undefined {
  try {
    const url = new URL(raw);
    return url.protocol === "http:" && url.hostname ? url : undefined;
  } catch {
    return undefined;
  }
}

/** CONNECT's target, `host:port` or `[v6]:port`. */
function connectTarget(raw: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[2]);
  if (!match?.[1] || !(port >= 1 && port <= 65535)) return undefined;
  return { host: match[1], port };
}
