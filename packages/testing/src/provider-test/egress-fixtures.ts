import dgram from "node:dgram";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type Docker from "dockerode";

// What the egress suites stand in for the internet with (provider-docker's
// docker-egress.test.ts, provider-kubernetes' kubernetes-egress.test.ts).

/** A reply the fixture hosts give, so a test knows it reached one. */
export const FIXTURE_REPLY = "fixture host says hello";

/** The fixture's HTTP server, in the computer image's python3. */
const FIXTURE_SERVER = `
import http.server
class Reply(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"${FIXTURE_REPLY}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Reply).serve_forever()
`;

/**
 * A network of its own (a random /24 of `prefix`, e.g. "10.215") with one
 * fixture host on it answering HTTP on 8080 under `aliases`: the names
 * the egress proxy's resolver (Docker's, once the proxy joins the network)
 * finds, standing in for public names. `program` runs another Python
 * server there instead (credential-fixtures.ts's HTTPS API).
 */
export async function fixtureHost(
  docker: Docker,
  image: string,
  name: string,
  prefix: string,
  aliases: string[],
  program: { script: string; env?: string[] } = { script: FIXTURE_SERVER },
): Promise<{ network: string; subnet: string; address: string; remove(): Promise<void> }> {
  const subnet = `${prefix}.${1 + Math.floor(Math.random() * 250)}.0/24`;
  await docker.createNetwork({ Name: name, Driver: "bridge", IPAM: { Config: [{ Subnet: subnet }] } });
  const container = await docker.createContainer({
    name: `${name}-host`,
    Image: image,
    Cmd: ["python3", "-c", program.script],
    User: "1000:1000",
    Env: program.env ?? [],
    HostConfig: { NetworkMode: name },
    NetworkingConfig: { EndpointsConfig: { [name]: { Aliases: aliases } } },
  });
  await container.start();
  const info = await container.inspect();
  const address = info.NetworkSettings.Networks[name]?.IPAddress ?? "";
  const remove = async () => {
    await container.remove({ force: true }).catch(() => {});
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => {});
  };
  return { network: name, subnet, address, remove };
}

/**
 * A server on this host, on every interface: a computer on the provider's
 * bridge reaches it at the bridge's gateway (README, "Network"), so it is
 * what a bot trying to bypass the proxy aims at. Counts the HTTP requests
 * and UDP datagrams that arrive.
 */
export async function hostSideTarget(): Promise<{
  httpPort: number;
  udpPort: number;
  arrived: { http: number; udp: number };
  close(): Promise<void>;
}> {
  const arrived = { http: 0, udp: 0 };
  const server = http.createServer((_, response) => {
    arrived.http++;
    response.end(FIXTURE_REPLY);
  });
  await new Promise<void>((done) => server.listen(0, "0.0.0.0", done));
  const udp = dgram.createSocket("udp4");
  udp.on("message", () => arrived.udp++);
  await new Promise<void>((done) => udp.bind(0, "0.0.0.0", done));
  return {
    httpPort: (server.address() as AddressInfo).port,
    udpPort: udp.address().port,
    arrived,
    close: async () => {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
      await new Promise<void>((done) => udp.close(() => done()));
    },
  };
}

/**
 * A bot's attempts around the proxy, in python3 as uid 1000 inside the
 * computer: a raw socket, a default route through `gateway` (the ioctl `ip
 * route` makes), a UDP datagram and an ICMP echo to the host. Prints one
 * JSON object of what each gave.
 */
export function bypassScript(hostAddress: string, udpPort: number, gateway: string): string {
  return `
import json, socket, struct, fcntl
out = {}
def attempt(name, work):
    try:
        out[name] = work()
    except Exception as error:
        out[name] = type(error).__name__ + ": " + str(error)
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) and "opened")
def route():
    sockaddr = lambda ip: struct.pack("=HH4s8x", socket.AF_INET, 0, socket.inet_aton(ip))
    entry = struct.pack("=Q", 0) + sockaddr("0.0.0.0") + sockaddr("${gateway}") + sockaddr("0.0.0.0") + struct.pack("=Hh", 3, 0)
    entry += bytes(120 - len(entry))
    fcntl.ioctl(socket.socket(socket.AF_INET, socket.SOCK_DGRAM), 0x890B, entry)
    return "route added"
attempt("route", route)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(3):
        s.sendto(b"around the proxy", ("${hostAddress}", ${udpPort}))
    return "sent"
attempt("udp", udp)
def echo():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.settimeout(2)
    s.sendto(struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping", ("${hostAddress}", 0))
    s.recvfrom(1024)
    return "reply"
attempt("icmp", echo)
print(json.dumps(out))
`;
}

/**
 * What a fenced computer's display browser reaches (issue 53), for the
 * Docker and Kubernetes egress suites alike: the bot serves a page on its
 * loopback (port 8765) with `sh`, then the display's real Chromium loads
 * the allowed fixture host, another fixture host, that loopback page and
 * the host-side target, and gathers WebRTC candidates against the host's
 * UDP port. Gives each page's text; the caller checks them and
 * `host.arrived` (4 s after the WebRTC offer).
 */
export async function displayBrowserReach(input: {
  sh: (script: string) => Promise<{ exitCode: number | null; err: string }>;
  desktop: {
    evaluateInPage(expression: string, args?: unknown, options?: { url?: string }): Promise<unknown>;
  };
  gateway: string;
  host: { httpPort: number; udpPort: number };
}): Promise<{ allowed: unknown; other: unknown; loopback: unknown; hostPage: unknown }> {
  const served = await input.sh(
    `mkdir -p site && printf bot-local-page > site/index.html && cd site && (setsid nohup python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &)
for i in $(seq 1 50); do curl -fs --noproxy '*' http://127.0.0.1:8765/ >/dev/null && exit 0; sleep 0.1; done; exit 1`,
  );
  if (served.exitCode !== 0) throw new Error(`the bot's loopback page did not start: ${served.err}`);
  const textOf = (url: string) => input.desktop.evaluateInPage("document.body.innerText", undefined, { url });
  const reached = {
    allowed: await textOf("http://allowed.example.test:8080/"),
    other: await textOf("http://other.example.test:8080/"),
    loopback: await textOf("http://127.0.0.1:8765/"),
    // The host, straight from a page: refused by the proxy (not allowed), never reached.
    hostPage: await textOf(`http://${input.gateway}:${input.host.httpPort}/`),
  };
  // WebRTC gathering candidates against a STUN server on the host: with no UDP but through the proxy, none leaves.
  await input.desktop.evaluateInPage(
    `(() => { const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:${input.gateway}:${input.host.udpPort}" }] }); pc.createDataChannel("probe"); pc.createOffer().then((offer) => pc.setLocalDescription(offer)); return "gathering"; })()`,
  );
  await new Promise((done) => setTimeout(done, 4000));
  return reached;
}
