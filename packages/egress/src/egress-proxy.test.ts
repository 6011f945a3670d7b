import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEgressProxy } from "./egress-proxy.js";
import type { EgressDenial } from "./egress-refusal.js";
import { EgressRules } from "./egress-rules.js";

// A real proxy on loopback in front of a real upstream on loopback, which the
// policy names as an allowed private range (the way a test stands a host in
// for a public one without changing the rule for anyone else).
const denials: EgressDenial[] = [];
let upstream: http.Server;
let echo: net.Server;
let proxy: http.Server;
let proxyPort = 0;
let upstreamPort = 0;
let echoPort = 0;
/** Sends each connection the bytes of the download its first line names, then ends it. */
let source: net.Server;
let sourcePort = 0;
const downloads = new Map(["a", "b", "c"].map((name) => [name, randomBytes(9 * 2 ** 20 + 12_345)]));
let socks: net.Server;
let socksPort = 0;
/** Targets the fake SOCKS server below opened: the computer's loopback proxy's stand-in. */
const socksTargets: string[] = [];

const listen = async (server: net.Server) => {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  upstream = http.createServer((request, response) =>
    response.end(`upstream saw ${request.headers.host} ${request.url}`),
  );
  echo = net.createServer((socket) => socket.pipe(socket));
  upstreamPort = await listen(upstream);
  echoPort = await listen(echo);
  source = net.createServer((socket) =>
    socket.once("data", (chunk) => socket.end(downloads.get(chunk.toString().trim()) ?? "")),
  );
  sourcePort = await listen(source);
  socks = net.createServer((socket) => minimalSocks5(socket));
  socksPort = await listen(socks);
  const rules = new EgressRules(
    { name: "fixture-policy", allow: ["allowed.test", "rebind.test"], allowPrivate: ["127.0.0.1/32"] },
    { resolve: async (host) => ({ "allowed.test": ["127.0.0.1"], "rebind.test": ["127.0.0.2"] })[host] ?? [] },
  );
  proxy = createEgressProxy({
    policyFor: ({ remoteAddress }) =>
      remoteAddress === "127.0.0.1"
        ? { rules, computerId: "c-1", loopbackVia: { host: "127.0.0.1", port: socksPort } }
        : undefined,
    onDenied: (denial) => denials.push(denial),
  });
  proxyPort = await listen(proxy);
});

afterAll(async () => {
  for (const server of [proxy, upstream]) server.closeAllConnections();
  for (const server of [proxy, upstream, echo, socks, source]) await new Promise((done) => server.close(done));
});

/** Just enough SOCKS5 (no auth, CONNECT to an IPv4 address or a name, which it opens on 127.0.0.1). */
function minimalSocks5(socket: net.Socket): void {
  socket.once("data", () => {
    socket.write(Buffer.from([5, 0]));
    socket.once("data", (request) => {
      const kind = request[3];
      const host =
        kind === 1 ? [...request.subarray(4, 8)].join(".") : request.subarray(5, 5 + (request[4] ?? 0)).toString();
      const port = request.readUInt16BE(request.length - 2);
      socksTargets.push(`${host}:${port}`);
      const target = net.connect(port, "127.0.0.1", () => {
        socket.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
        target.pipe(socket);
        socket.pipe(target);
      });
      target.on("error", () => socket.destroy());
    });
  });
}

function viaProxy(url: string): Promise<{ status: number; body: string; refusal?: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: "127.0.0.1", port: proxyPort, path: url, agent: false }, (response) => {
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          body,
          refusal: response.headers["x-agent-computer-egress"] as string | undefined,
        }),
      );
    });
    request.on("error", reject);
    request.end();
  });
}

function connectVia(target: string): Promise<{ head: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, "127.0.0.1", () =>
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`),
    );
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString();
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      resolve({ head, socket });
    };
    socket.on("data", onData);
    socket.on("error", reject);
  });
}

describe("egress proxy", () => {
  it("forwards a request to an allowed host, to the address it judged, with the request's Host", async () => {
    const answer = await viaProxy(`http://allowed.test:${upstreamPort}/page?x=1`);
    expect(answer).toMatchObject({ status: 200, body: `upstream saw allowed.test:${upstreamPort} /page?x=1` });
  });

  it("refuses another host with a 403 naming the policy and the host, and reports it", async () => {
    denials.length = 0;
    const answer = await viaProxy(`http://other.test:${upstreamPort}/`);
    expect(answer.status).toBe(403);
    expect(answer.refusal).toBe("not-allowed");
    expect(answer.body).toContain('egress policy "fixture-policy"');
    expect(answer.body).toContain("other.test");
    expect(denials).toEqual([
      expect.objectContaining({
        policy: "fixture-policy",
        host: "other.test",
        port: upstreamPort,
        reason: "not-allowed",
        computerId: "c-1",
      }),
    ]);
  });

  it("refuses an allowed name that resolves to a private address outside the allowance", async () => {
    const answer = await viaProxy(`http://rebind.test:${upstreamPort}/`);
    expect(answer.status).toBe(403);
    expect(answer.body).toContain("rebind.test");
    expect(answer.refusal).toBe("private-address");
  });

  it("tunnels CONNECT to an allowed host and refuses one to another with a 403", async () => {
    const open = await connectVia(`allowed.test:${echoPort}`);
    expect(open.head).toMatch(/^HTTP\/1\.1 200/);
    const echoed = new Promise<string>((done) => open.socket.once("data", (chunk) => done(chunk.toString())));
    open.socket.write("ping through the tunnel");
    expect(await echoed).toBe("ping through the tunnel");
    open.socket.destroy();

    const refused = await connectVia(`10.9.9.9:${echoPort}`);
    expect(refused.head).toMatch(/^HTTP\/1\.1 403/);
    expect(refused.head).toContain("not-allowed");
    refused.socket.destroy();
  });

  it("carries downloads through tunnels side by side intact, to a client that reads slowly, and passes on their end", async () => {
    // The tunnel's reads share pooled buffers (tunnel-upstream.ts): one reused before its write was done would show here.
    const download = async (name: string) => {
      const open = await connectVia(`allowed.test:${sourcePort}`);
      const hash = createHash("sha256");
      let bytes = 0;
      const ended = new Promise<void>((done) => open.socket.on("end", done));
      open.socket.on("data", (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
        // A slow reader for the first megabytes: the proxy must wait for it, not drop or reorder.
        if (bytes < 3 * 2 ** 20) {
          open.socket.pause();
          setTimeout(() => open.socket.resume(), 2);
        }
      });
      open.socket.write(`${name}\n`);
      await ended;
      open.socket.destroy();
      return { bytes, hash: hash.digest("hex") };
    };
    const got = await Promise.all([...downloads.keys()].map(download));
    expect(got).toEqual(
      [...downloads.values()].map((bytes) => ({
        bytes: bytes.length,
        hash: createHash("sha256").update(bytes).digest("hex"),
      })),
    );
  });

  it("sends loopback destinations to the computer's loopback through its SOCKS server, plain and tunnelled", async () => {
    socksTargets.length = 0;
    const plain = await viaProxy(`http://localhost:${upstreamPort}/own-page`);
    expect(plain).toMatchObject({ status: 200, body: `upstream saw localhost:${upstreamPort} /own-page` });
    const open = await connectVia(`127.0.0.1:${echoPort}`);
    expect(open.head).toMatch(/^HTTP\/1\.1 200/);
    const echoed = new Promise<string>((done) => open.socket.once("data", (chunk) => done(chunk.toString())));
    open.socket.write("loopback through socks");
    expect(await echoed).toBe("loopback through socks");
    open.socket.destroy();
    expect(socksTargets).toEqual([`localhost:${upstreamPort}`, `127.0.0.1:${echoPort}`]);
  });
});
