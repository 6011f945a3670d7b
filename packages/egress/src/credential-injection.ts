import http from "node:http";
import https from "node:https";
import type net from "node:net";
import tls from "node:tls";
import type { ResolvedEgressPolicy } from "@agent-computer/core";
import { endToEndHeaders } from "@agent-computer/core/provider-utils";

// Credentials added on the way out (README, "Credentials added on the way
// out"; issue 53): the header a named host gets, added by the proxy to a
// plain HTTP request it forwards, or to each request inside a CONNECT
// tunnel it terminates with the computer's own certificate.

type ResolvedCredential = ResolvedEgressPolicy["credentials"][number];

/** One header to set, lower-cased. Its value is a secret: never logged, never in an error or a report. */
export interface CredentialHeader {
  readonly name: string;
  readonly value: string;
}

/** A client's credentials, ready for the proxy: which header a host gets, and the certificate shown for those hosts. */
export interface EgressCredentials {
  headerFor(host: string): CredentialHeader | undefined;
  /** The proxy's side of TLS for the named hosts (the computer's own CA signed it). */
  readonly serverContext: tls.SecureContext;
}

/** Builds a client's credentials from its policy's list and the proxy's certificate and key (PEM). */
export function egressCredentials(
  credentials: readonly ResolvedCredential[],
  tlsIdentity: { readonly certificate: string; readonly key: string },
): EgressCredentials {
  const byHost = new Map(credentials.map((credential) => [credential.host, headerOf(credential)]));
  const serverContext = tls.createSecureContext({ cert: tlsIdentity.certificate, key: tlsIdentity.key });
  return { headerFor: (host) => byHost.get(host), serverContext };
}

function headerOf(credential: ResolvedCredential): CredentialHeader {
  if (credential.header) return { name: credential.header.name.toLowerCase(), value: credential.header.value };
  const { username, password } = credential.basic ?? { username: "", password: "" };
  return { name: "authorization", value: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}` };
}

/** The request's headers as sent on: end-to-end ones, `host`, and the credential replacing any of its name. */
export function headersWithCredential(
  incoming: http.IncomingHttpHeaders,
  host: string,
  credential: CredentialHeader | undefined,
): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = { ...endToEndHeaders(incoming), host };
  if (credential) headers[credential.name] = credential.value;
  return headers;
}

/** Where a terminated tunnel's requests go: the name (for SNI and the certificate check), the judged address, the port. */
interface InterceptedTarget {
  readonly host: string;
  readonly address: string;
  readonly port: number;
  readonly credential: CredentialHeader;
}

/**
 * Terminates CONNECT tunnels to named hosts: the client's TLS ends here
 * (with `EgressCredentials.serverContext`), each request inside goes on
 * over a new TLS connection to the judged address, checked against
 * `upstreamCa` for the host's name, with the credential added.
 */
export class TunnelInterceptor {
  private readonly targets = new WeakMap<net.Socket, InterceptedTarget>();
  private readonly inner: http.Server;
  private readonly agent: https.Agent;

  constructor(upstreamCa: readonly string[]) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 256, ca: [...upstreamCa] });
    this.inner = http.createServer({ keepAlive: true }, (request, response) => this.forward(request, response));
  }

  /** Answers the CONNECT, then speaks TLS as `target.host` on the client's socket. */
  intercept(client: net.Socket, head: Buffer, target: InterceptedTarget, serverContext: tls.SecureContext): void {
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) client.unshift(head);
    const secure = new tls.TLSSocket(client, { isServer: true, secureContext: serverContext });
    secure.on("error", () => client.destroy());
    this.targets.set(secure, target);
    this.inner.emit("connection", secure);
  }

  private forward(request: http.IncomingMessage, response: http.ServerResponse): void {
    const target = this.targets.get(request.socket);
    if (!target) {
      response.writeHead(502).end();
      return;
    }
    const hostHeader = target.port === 443 ? target.host : `${target.host}:${target.port}`;
    const upstream = https.request({
      host: target.address,
      port: target.port,
      servername: target.host,
      // The certificate is checked for the name the client asked for, not the address connected to.
      checkServerIdentity: (_, certificate) => tls.checkServerIdentity(target.host, certificate),
      agent: this.agent,
      method: request.method,
      path: request.url,
      headers: headersWithCredential(request.headers, hostHeader, target.credential),
      setHost: false,
    });
    upstream.on("response", (answer) => {
      response.writeHead(answer.statusCode ?? 502, endToEndHeaders(answer.headers));
      answer.pipe(response);
    });
    upstream.on("error", (error) => {
      // The error names the host and the cause (a certificate refused, say), never a header.
      if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
      response.end(`egress proxy: ${target.host}:${target.port} did not answer (${error.message})\n`);
    });
    request.pipe(upstream);
  }

  close(): void {
    this.agent.destroy();
    this.inner.close();
  }
}
