import type Docker from "dockerode";
import { fixtureHost } from "./egress-fixtures.js";

// What the credentials suites stand in for an API with (provider-docker's
// docker-egress-credentials.test.ts, provider-kubernetes'
// kubernetes-egress-credentials.test.ts).

/**
 * The fixture API, in the computer image's python3: HTTPS on 8443 with the
 * certificate its own CA signed (FIXTURE_CERT, FIXTURE_KEY), plain HTTP on
 * 8080. It answers with the SHA-256 of the `authorization` header it got
 * (empty when none), so a test learns what arrived without the computer's
 * program ever receiving the value.
 */
const FIXTURE_API = `
import hashlib, http.server, json, os, ssl, threading
class Reply(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        got = self.headers.get("authorization")
        body = json.dumps({"authorization": hashlib.sha256(got.encode()).hexdigest() if got else ""}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
for name, value in (("cert.pem", "FIXTURE_CERT"), ("key.pem", "FIXTURE_KEY")):
    open("/tmp/" + name, "w").write(os.environ[value])
plain = http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Reply)
threading.Thread(target=plain.serve_forever, daemon=True).start()
secure = http.server.ThreadingHTTPServer(("0.0.0.0", 8443), Reply)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tmp/cert.pem", "/tmp/key.pem")
secure.socket = context.wrap_socket(secure.socket, server_side=True)
secure.serve_forever()
`;

/** The fixture API on a network of its own (a random /24 of `prefix`), under `aliases`, with its certificate. */
export async function fixtureApi(
  docker: Docker,
  image: string,
  name: string,
  prefix: string,
  aliases: string[],
  tlsIdentity: { certificate: string; key: string },
): Promise<{ network: string; subnet: string; remove(): Promise<void> }> {
  return fixtureHost(docker, image, name, prefix, aliases, {
    script: FIXTURE_API,
    env: [`FIXTURE_CERT=${tlsIdentity.certificate}`, `FIXTURE_KEY=${tlsIdentity.key}`],
  });
}

/** A program in the computer using node's https: CONNECT through HTTPS_PROXY by hand (node 18 reads no proxy variable). */
export function nodeHttpsGet(host: string, port: number, path: string): string {
  return `
const http = require("http"), https = require("https"), tls = require("tls");
const proxy = new URL(process.env.HTTPS_PROXY);
http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: "${host}:${port}" })
  .on("connect", (answer, socket) => {
    if (answer.statusCode !== 200) { console.error("CONNECT " + answer.statusCode); process.exit(2); }
    https.get({ host: "${host}", port: ${port}, path: "${path}",
      createConnection: () => tls.connect({ socket, servername: "${host}" }) }, (reply) => {
      let body = ""; reply.on("data", (c) => (body += c)); reply.on("end", () => { process.stdout.write(body); process.exit(0); });
    }).on("error", (e) => { console.error(e.message); process.exit(3); });
  }).end();
`;
}
