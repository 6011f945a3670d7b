import type Docker from "dockerode";

// The internet's stand-ins of the hosted providers' egress suites (E2B's,
// Daytona's and CreateOS's `*-egress.test.ts`): a fixture host on Docker's
// bridge beside an emulator's sandboxes, answering `fixture <role>` over
// HTTP on its plain ports and over HTTPS (a self-signed certificate) on 443.

/** The fixture's servers, in the computer image's python3: argv is the role, then the ports (443 speaks TLS). */
const BRIDGE_FIXTURE_SERVER = `
import http.server, ssl, subprocess, sys, threading
name = sys.argv[1].encode()
ports = [int(port) for port in sys.argv[2:]]
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=fixture",
                "-keyout", "/tmp/key.pem", "-out", "/tmp/cert.pem", "-days", "1"], check=True, capture_output=True)
class Reply(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"fixture " + name
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tmp/cert.pem", "/tmp/key.pem")
servers = []
for port in ports:
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Reply)
    if port == 443:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    servers.append(server)
for server in servers[1:]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
servers[0].serve_forever()
`;

/**
 * Starts a fixture host named `name` (its role is the name's last
 * `-`-separated part, what it answers with) on Docker's bridge, labelled
 * `label`; resolves once HTTPS on 443 takes connections. Gives its bridge
 * address and how to remove it.
 */
export async function bridgeFixtureHost(
  docker: Docker,
  image: string,
  name: string,
  options: { label: string; ports?: readonly number[] },
): Promise<{ address: string; remove(): Promise<void> }> {
  const ports = options.ports ?? [80, 443];
  const container = await docker.createContainer({
    name,
    Image: image,
    Cmd: ["python3", "-c", BRIDGE_FIXTURE_SERVER, name.split("-").pop() as string, ...ports.map(String)],
    User: "0:0",
    Labels: { [options.label]: "fixture" },
    HostConfig: { NetworkMode: "bridge" },
  });
  await container.start();
  const address = (await container.inspect()).NetworkSettings.Networks.bridge?.IPAddress ?? "";
  for (let tries = 0; tries < 100; tries++) {
    const ready = await container.exec({ Cmd: ["sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/443"], AttachStdout: true });
    const stream = await ready.start({});
    await new Promise((done) => stream.on("end", done).resume());
    if ((await ready.inspect()).ExitCode === 0) break;
    await new Promise((done) => setTimeout(done, 100));
  }
  return {
    address,
    remove: () =>
      container.remove({ force: true }).then(
        () => {},
        () => {},
      ),
  };
}

/** The three fixture hosts every hosted egress suite stands the internet in with. */
export interface EgressFixtureTrio {
  /** The host the suites' policies allow, and another they do not: both stand in for public hosts. */
  readonly allowed: string;
  readonly other: string;
  /** A host the suites leave what it is, a private address. */
  readonly internal: string;
  remove(): Promise<void>;
}

/** Starts the allowed, other and internal fixture hosts (named `<prefix>-<role>`) side by side. */
export async function bridgeFixtureTrio(
  docker: Docker,
  image: string,
  prefix: string,
  options: { label: string; ports?: readonly number[] },
): Promise<EgressFixtureTrio> {
  const made = await Promise.allSettled(
    ["allowed", "other", "internal"].map((role) => bridgeFixtureHost(docker, image, `${prefix}-${role}`, options)),
  );
  const started = made.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const remove = async () => {
    await Promise.all(started.map((fixture) => fixture.remove()));
  };
  const failed = made.find((result) => result.status === "rejected");
  if (failed) {
    await remove();
    throw failed.reason;
  }
  const [allowed, other, internal] = started.map((fixture) => fixture.address) as [string, string, string];
  return { allowed, other, internal, remove };
}
