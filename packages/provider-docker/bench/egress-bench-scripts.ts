// The programs the egress bench runs in containers of the computer image (its Node 18).

/**
 * The fixture server: `/bytes?n=N` streams N bytes from a 1 MiB buffer
 * (`&rate=R`: paced to R bytes a second in 64 KiB pieces, as a link of
 * that speed would deliver them), `/tiny` answers two bytes.
 */
export const BENCH_SERVER = `
const http = require("http");
const chunk = Buffer.alloc(1 << 20, 120);
http.createServer((request, response) => {
  const url = new URL(request.url, "http://x");
  if (url.pathname === "/tiny") return response.end("ok");
  let left = Number(url.searchParams.get("n"));
  const rate = Number(url.searchParams.get("rate")) || 0;
  const piece = rate > 0 ? chunk.subarray(0, 1 << 16) : chunk;
  const started = Date.now();
  let sent = 0;
  response.writeHead(200, { "content-length": left });
  const more = () => {
    while (left > 0) {
      const due = rate > 0 ? started + (sent / rate) * 1000 : 0;
      if (due > Date.now()) return void setTimeout(more, due - Date.now());
      const part = left >= piece.length ? piece : piece.subarray(0, left);
      left -= part.length;
      sent += part.length;
      if (!response.write(part)) return response.once("drain", more);
    }
    response.end();
  };
  more();
}).listen(8080, "0.0.0.0");
`;

/** What the client measures: an HTTP client direct and through the proxy; a raw socket direct and through a CONNECT tunnel. */
export type BenchSide = "direct" | "proxied" | "directRaw" | "tunnelled";

/**
 * The client, in the computer: one download of \`bytes\` and \`requests\`
 * small requests, direct to \`directHost\` and through the proxy to
 * \`proxiedHost\`, timed inside the computer (so no exec round trip enters
 * a figure), in the order given. Prints JSON: per side, the download's
 * seconds and the mean milliseconds per small request, on one kept
 * connection and on a new connection each.
 */
export function benchClient(options: {
  directHost: string;
  proxiedHost: string;
  proxy: string;
  bytes: number;
  requests: number;
  order: BenchSide[];
  /** Bytes a second the server paces its downloads to; absent: as fast as it can. */
  rate?: number;
}): string {
  return `
const http = require("http");
const net = require("net");
const { performance } = require("perf_hooks");
const o = ${JSON.stringify(options)};
const [proxyHost, proxyPort] = o.proxy.split(":");
function get(side, path, agent) {
  const target = side === "direct" ? o.directHost : o.proxiedHost;
  const request = side === "direct"
    ? { host: target, port: 8080, path, agent }
    : { host: proxyHost, port: Number(proxyPort), path: "http://" + target + ":8080" + path, headers: { host: target + ":8080" }, agent };
  return new Promise((resolve, reject) => {
    http.get(request, (response) => {
      let size = 0;
      response.on("data", (c) => (size += c.length));
      response.on("end", () => (response.statusCode === 200 ? resolve(size) : reject(new Error(side + " answered " + response.statusCode))));
      response.on("error", reject);
    }).on("error", reject);
  });
}
// A download read raw off a socket (no HTTP parser), as the tunnel's and its direct baseline's both are.
function rawDownload(socket, host, path) {
  return new Promise((resolve, reject) => {
    let head = "";
    let body = -1;
    socket.on("data", (chunk) => {
      if (body >= 0) return void (body += chunk.length);
      head += chunk.toString("latin1");
      const end = head.indexOf("\\r\\n\\r\\n");
      if (end >= 0) body = head.length - end - 4;
    });
    socket.on("end", () => resolve(body));
    socket.on("error", reject);
    socket.write("GET " + path + " HTTP/1.1\\r\\nHost: " + host + "\\r\\nConnection: close\\r\\n\\r\\n");
  });
}
// Through a CONNECT tunnel, as every HTTPS download goes.
function tunnelledDownload(path) {
  return new Promise((resolve, reject) => {
    const connect = http.request({ host: proxyHost, port: Number(proxyPort), method: "CONNECT", path: o.proxiedHost + ":8080" });
    connect.on("connect", (response, socket) => {
      if (response.statusCode !== 200) return reject(new Error("CONNECT answered " + response.statusCode));
      rawDownload(socket, o.proxiedHost, path).then(resolve, reject);
    });
    connect.on("error", reject);
    connect.end();
  });
}
// The tunnel's baseline: the same raw download, straight to the server.
function directRawDownload(path) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: o.directHost, port: 8080 }, () => rawDownload(socket, o.directHost, path).then(resolve, reject));
    socket.on("error", reject);
  });
}
const bytesPath = "/bytes?n=" + o.bytes + (o.rate ? "&rate=" + o.rate : "");
async function side(name) {
  if (name === "tunnelled" || name === "directRaw") {
    const start = performance.now();
    const got = await (name === "tunnelled" ? tunnelledDownload : directRawDownload)(bytesPath);
    if (got !== o.bytes) throw new Error(name + " download gave " + got + " bytes of " + o.bytes);
    return { seconds: (performance.now() - start) / 1000 };
  }
  let start = performance.now();
  const got = await get(name, bytesPath, false);
  if (got !== o.bytes) throw new Error(name + " download gave " + got + " bytes of " + o.bytes);
  const seconds = (performance.now() - start) / 1000;
  const kept = new http.Agent({ keepAlive: true, maxSockets: 1 });
  await get(name, "/tiny", kept);
  start = performance.now();
  for (let i = 0; i < o.requests; i++) await get(name, "/tiny", kept);
  const keptMs = (performance.now() - start) / o.requests;
  kept.destroy();
  start = performance.now();
  for (let i = 0; i < o.requests; i++) await get(name, "/tiny", false);
  const freshMs = (performance.now() - start) / o.requests;
  return { seconds, keptMs, freshMs };
}
(async () => {
  const out = {};
  for (const name of o.order) out[name] = await side(name);
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { process.stderr.write(String(error && error.stack || error)); process.exit(1); });
`;
}
