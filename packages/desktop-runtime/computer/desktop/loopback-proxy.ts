// `desktop loopback-proxy` (docs/architecture.md §4, "Whose input a display
// takes"): runs in a computer whose display stack lives in a container of
// its own. That container's Chromium has its own loopback, so the servers a
// bot starts on the computer's `localhost` would be out of its reach; the
// display's Chromium sends loopback URLs, and only those, here as SOCKS5
// (`--proxy-bypass-list=*;<-loopback>`), and this proxy opens them on the
// computer's loopback. It runs as the bot's own user and reaches nothing
// the bot could not reach itself: any other destination is refused.
import net from "node:net";
import { LOOPBACK_PROXY_PORT } from "../../src/desktop/display-apart-policy.js";

/** A client that has not finished its SOCKS handshake by then is dropped. */
const HANDSHAKE_MS = 10_000;

const SOCKS_VERSION = 5;
const NO_AUTHENTICATION = 0;
const CONNECT = 1;
const ADDRESS_IPV4 = 1;
const ADDRESS_NAME = 3;
const ADDRESS_IPV6 = 4;
const REPLY_OK = 0;
const REPLY_NOT_ALLOWED = 2;
const REPLY_REFUSED = 5;
const REPLY_COMMAND_UNSUPPORTED = 7;

/**
 * The loopback host a SOCKS destination names, or undefined when it names
 * any other: `localhost` and `*.localhost` (as Chromium's implicit bypass
 * rules count them), 127.0.0.0/8 and ::1.
 */
export function loopbackHostOf(destination: string): string | undefined {
  const host = destination.toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return "localhost";
  if (net.isIPv4(host) && host.startsWith("127.")) return host;
  if (net.isIPv6(host) && /^(0{0,4}:){2,7}0{0,3}1$|^::1$/.test(host)) return "::1";
  return undefined;
}

/** A parsed SOCKS5 CONNECT request, or why it cannot be served. */
type Request = { host: string; port: number; length: number } | { reply: number } | undefined;

/** Reads a CONNECT request from `data` (undefined: not all of it has arrived). */
export function parseConnectRequest(data: Buffer): Request {
  if (data.length < 5) return undefined;
  if (data[0] !== SOCKS_VERSION) return { reply: REPLY_NOT_ALLOWED };
  if (data[1] !== CONNECT) return { reply: REPLY_COMMAND_UNSUPPORTED };
  const type = data[3];
  let host: string;
  let end: number;
  if (type === ADDRESS_IPV4) {
    end = 4 + 4;
    if (data.length < end + 2) return undefined;
    host = [...data.subarray(4, end)].join(".");
  } else if (type === ADDRESS_NAME) {
    end = 5 + (data[4] ?? 0);
    if (data.length < end + 2) return undefined;
    host = data.subarray(5, end).toString("latin1");
  } else if (type === ADDRESS_IPV6) {
    end = 4 + 16;
    if (data.length < end + 2) return undefined;
    const groups: string[] = [];
    for (let i = 4; i < end; i += 2) groups.push(data.readUInt16BE(i).toString(16));
    host = groups
      .join(":")
      .replace(/^(0:)+0$/, "::")
      .replace(/^(0:){7}1$/, "::1");
  } else {
    return { reply: REPLY_NOT_ALLOWED };
  }
  return { host, port: data.readUInt16BE(end), length: end + 2 };
}

/** A reply with a zero bound address: Chromium reads only the code. */
const reply = (code: number) => Buffer.from([SOCKS_VERSION, code, 0, ADDRESS_IPV4, 0, 0, 0, 0, 0, 0]);

/** Serves one client: greeting, one CONNECT to a loopback destination, then bytes both ways. */
function serveClient(client: net.Socket): void {
  let buffered = Buffer.alloc(0);
  let greeted = false;
  const deadline = setTimeout(() => client.destroy(), HANDSHAKE_MS);
  client.on("error", () => {});
  client.once("close", () => clearTimeout(deadline));
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (!greeted) {
      if (buffered.length < 2) return;
      const methods = buffered.subarray(2, 2 + (buffered[1] ?? 0));
      if (buffered[0] !== SOCKS_VERSION || methods.length < (buffered[1] ?? 0)) {
        if (buffered[0] !== SOCKS_VERSION) client.destroy();
        return;
      }
      if (!methods.includes(NO_AUTHENTICATION)) {
        client.end(Buffer.from([SOCKS_VERSION, 0xff]));
        return;
      }
      greeted = true;
      buffered = buffered.subarray(2 + methods.length);
      client.write(Buffer.from([SOCKS_VERSION, NO_AUTHENTICATION]));
    }
    const request = parseConnectRequest(buffered);
    if (!request) return;
    client.off("data", onData);
    if ("reply" in request) {
      client.end(reply(request.reply));
      return;
    }
    const host = loopbackHostOf(request.host);
    if (!host) {
      client.end(reply(REPLY_NOT_ALLOWED));
      return;
    }
    const rest = buffered.subarray(request.length);
    const target = net.connect({ host, port: request.port, autoSelectFamily: true });
    let connected = false;
    target.on("error", () => {
      if (connected) client.destroy();
      else client.end(reply(REPLY_REFUSED));
    });
    target.once("connect", () => {
      connected = true;
      clearTimeout(deadline);
      client.write(reply(REPLY_OK));
      if (rest.length > 0) target.write(rest);
      target.pipe(client);
      client.pipe(target);
    });
    client.once("close", () => target.destroy());
    target.once("close", () => client.end());
  };
  client.on("data", onData);
}

/** The proxy's server, not yet listening: `runLoopbackProxy` serves it, tests listen on a port of their own. */
export function createLoopbackProxy(): net.Server {
  return net.createServer(serveClient);
}

/** Serves until SIGTERM or SIGINT on every address of the computer, port `port`. */
export async function runLoopbackProxy(port = LOOPBACK_PROXY_PORT): Promise<void> {
  const server = createLoopbackProxy();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  process.stdout.on("error", () => {});
  process.stdout.write(`${JSON.stringify({ ok: true, port })}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
}
