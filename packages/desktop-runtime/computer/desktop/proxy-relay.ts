// `desktop proxy-relay` (docs/architecture.md §4): a bot's loopback proxy relay. Chromium
// cannot carry proxy credentials, so it talks to this relay on 127.0.0.1
// without any, and the relay adds `Proxy-Authorization: Basic` to every
// request and CONNECT it passes to the upstream proxy. Credentials arrive on
// stdin only, never in argv, the environment, logs or output.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { endToEndHeaders } from "@agent-computer/core/provider-utils";
import { CliError } from "./cli-error.js";

/**
 * Relay ports: a fixed range below Linux's ephemeral ports (32768+) and away
 * from DevTools (9300+), displays and screens, so a derived port is seldom
 * taken by an outgoing connection.
 */
export const RELAY_FIRST_PORT = 20_000;
export const RELAY_PORT_COUNT = 10_000;
/** Taken ports probed after the derived one before giving up. */
const RELAY_PROBES = 64;
/** An upstream that accepts no connection within this fails the request instead of hanging it. */
const UPSTREAM_CONNECT_MS = 15_000;
/** The most a CONNECT answer's head may take; a longer one is not a proxy. */
const MAX_CONNECT_HEAD = 16 * 1024;

/** What the relay reads on stdin, as JSON. */
export interface ProxyRelayInput {
  /** `http://host:port` or `https://host:port`, without credentials. */
  readonly upstream: string;
  readonly username: string;
  readonly password: string;
}

/** The relay port a profile prefers: a stable hash of its path into the range, so two bots differ. */
export function preferredRelayPort(profile: string): number {
  const hash = createHash("sha256").update(profile).digest();
  return RELAY_FIRST_PORT + (hash.readUInt32BE(0) % RELAY_PORT_COUNT);
}

interface Upstream {
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  readonly authorization: string;
}

function upstreamOf(input: unknown): Upstream {
  const given = input as Partial<ProxyRelayInput> | null;
  if (typeof given?.upstream !== "string" || typeof given.username !== "string" || typeof given.password !== "string") {
    throw new CliError("INVALID_ARGUMENT", "proxy-relay reads {upstream, username, password} as JSON on stdin.");
  }
  let url: URL;
  try {
    url = new URL(given.upstream);
  } catch {
    throw new CliError("INVALID_ARGUMENT", "proxy-relay: the upstream is not a URL.");
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) {
    throw new CliError(
      "INVALID_ARGUMENT",
      "proxy-relay: the upstream must be http(s)://host:port without credentials.",
    );
  }
  const secure = url.protocol === "https:";
  return {
    secure,
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port) || (secure ? 443 : 80),
    authorization: `Basic ${Buffer.from(`${given.username}:${given.password}`, "utf8").toString("base64")}`,
  };
}

/** The relay's own answer: a page a person or a model can read, so a failed upstream is never a blank hang. */
function failurePage(status: number, reason: string): { headers: Record<string, string>; body: string } {
  const body = `<!doctype html><title>Proxy relay: ${reason}</title><h1>The page did not load</h1><p>${reason}</p>\n`;
  return {
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Length": String(Buffer.byteLength(body)),
      "X-Agent-Computer-Proxy-Relay": status === 504 ? "upstream-timeout" : "upstream-failed",
      Connection: "close",
    },
    body,
  };
}

/** The same answer on a raw socket (a CONNECT that failed). */
function rawFailure(status: number, reason: string): string {
  const { headers, body } = failurePage(status, reason);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${lines.join("")}\r\n${body}`;
}

function upstreamReason(status: number): string {
  return status === 407
    ? "The upstream proxy refused this bot's proxy credentials (HTTP 407)."
    : `The upstream proxy answered HTTP ${status}.`;
}

function connectFailure(error: NodeJS.ErrnoException): { status: number; reason: string } {
  if (error.code === "ETIMEDOUT")
    return { status: 504, reason: `The upstream proxy did not answer within ${UPSTREAM_CONNECT_MS / 1000} s.` };
  return { status: 502, reason: `The upstream proxy could not be reached (${error.code ?? "connection failed"}).` };
}

/** Fails `socket` (a destroyed-before-connect upstream) with ETIMEDOUT when it does not connect in time. */
function connectDeadline(socket: net.Socket): void {
  if (!socket.connecting) return;
  const timer = setTimeout(() => {
    socket.destroy(Object.assign(new Error("connect timed out"), { code: "ETIMEDOUT" }));
  }, UPSTREAM_CONNECT_MS);
  socket.once("connect", () => clearTimeout(timer));
  socket.once("close", () => clearTimeout(timer));
}

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

/**
 * Serves the relay until SIGTERM or SIGINT: binds 127.0.0.1 on the first
 * free port from `port` (probing the next ones), prints
 * `{"ok":true,"port":N}` on stdout once listening, and prints nothing after.
 */
export async function runProxyRelay(bot: string, port: number): Promise<void> {
  let input: unknown;
  try {
    input = JSON.parse(readFileSync(0, "utf8"));
  } catch {
    throw new CliError("INVALID_ARGUMENT", "proxy-relay reads {upstream, username, password} as JSON on stdin.");
  }
  const upstream = upstreamOf(input);
  input = undefined;
  const agentOptions = { keepAlive: true, maxSockets: 64 };
  const agent = upstream.secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const sockets = new Set<net.Socket>();

  const dial = (): net.Socket => {
    const socket = upstream.secure
      ? tls.connect({ host: upstream.host, port: upstream.port, servername: upstream.host })
      : net.connect({ host: upstream.host, port: upstream.port });
    connectDeadline(socket);
    return socket;
  };

  const server = http.createServer((req, res) => {
    const url = req.url ?? "";
    if (!/^https?:\/\//i.test(url)) {
      res
        .writeHead(400, { "Content-Type": "text/plain" })
        .end("This is a proxy relay: send absolute URLs or CONNECT.\n");
      return;
    }
    const forward = (upstream.secure ? https : http).request({
      host: upstream.host,
      port: upstream.port,
      method: req.method,
      path: url,
      headers: { ...endToEndHeaders(req.headers), "proxy-authorization": upstream.authorization },
      agent,
    });
    forward.on("socket", connectDeadline);
    forward.on("response", (answer) => {
      if (answer.statusCode === 407) {
        answer.resume();
        log(`${req.method} ${safeHost(url)}: upstream refused the credentials (407)`);
        const { headers, body } = failurePage(502, upstreamReason(407));
        res.writeHead(502, headers).end(body);
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEndHeaders(answer.headers));
      answer.pipe(res);
    });
    forward.on("error", (error: NodeJS.ErrnoException) => {
      const { status, reason } = connectFailure(error);
      log(`${req.method} ${safeHost(url)}: ${reason}`);
      if (res.headersSent) res.destroy();
      else {
        const { headers, body } = failurePage(status, reason);
        res.writeHead(status, headers).end(body);
      }
    });
    // The browser gave up (a closed tab): stop the upstream request too.
    res.on("close", () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.pipe(forward);
  });

  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = req.url ?? "";
    if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(target)) {
      client.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
      return;
    }
    const up = dial();
    let established = false;
    let failed = false;
    let answer = Buffer.alloc(0);
    const fail = (status: number, reason: string) => {
      if (failed) return;
      failed = true;
      log(`CONNECT ${target}: ${reason}`);
      if (!client.destroyed) client.end(rawFailure(status, reason));
      up.destroy();
    };
    client.on("error", () => up.destroy());
    client.on("close", () => up.destroy());
    up.once(upstream.secure ? "secureConnect" : "connect", () => {
      up.write(
        `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${upstream.authorization}\r\n\r\n`,
      );
    });
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf("\r\n\r\n");
      if (end < 0) {
        if (answer.length > MAX_CONNECT_HEAD) fail(502, "The upstream proxy sent an oversized answer to CONNECT.");
        return;
      }
      up.off("data", onData);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer.subarray(0, end).toString("latin1"))?.[1] ?? 0);
      if (status < 200 || status > 299) {
        fail(502, status ? upstreamReason(status) : "The upstream proxy's answer to CONNECT was not HTTP.");
        return;
      }
      established = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      const rest = answer.subarray(end + 4);
      if (rest.length > 0) client.write(rest);
      if (head.length > 0) up.write(head);
      up.pipe(client);
      client.pipe(up);
    };
    up.on("data", onData);
    up.on("error", (error: NodeJS.ErrnoException) => {
      if (established) client.destroy();
      else {
        const { status, reason } = connectFailure(error);
        fail(status, reason);
      }
    });
    up.on("close", () => {
      if (established) client.end();
      else if (!client.destroyed) fail(502, "The upstream proxy closed the connection during CONNECT.");
    });
  });

  // Chromium tunnels websockets with CONNECT; a plain-HTTP upgrade is refused, not passed on half-done.
  server.on("upgrade", (_req: http.IncomingMessage, client: net.Socket) => {
    client.end("HTTP/1.1 501 Not Implemented\r\nConnection: close\r\n\r\n");
  });
  server.on("clientError", (_error: Error, socket: net.Socket) => socket.destroy());
  server.on("connection", (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  const bound = await listenFrom(server, port);
  process.stdout.on("error", () => {});
  process.stdout.write(`${JSON.stringify({ ok: true, bot, port: bound })}\n`);
  log(
    `relay for ${bot} on 127.0.0.1:${bound} to ${upstream.secure ? "https" : "http"}://${upstream.host}:${upstream.port}`,
  );

  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
}

/** The host of an absolute URL, for a log line (never its path or query, which may carry tokens). */
function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(unparsable URL)";
  }
}

async function listenFrom(server: http.Server, first: number): Promise<number> {
  const start = Math.min(Math.max(first, RELAY_FIRST_PORT), RELAY_FIRST_PORT + RELAY_PORT_COUNT - 1);
  for (let i = 0; i < RELAY_PROBES; i++) {
    const port = RELAY_FIRST_PORT + ((start - RELAY_FIRST_PORT + i) % RELAY_PORT_COUNT);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ host: "127.0.0.1", port, exclusive: true }, () => {
          server.off("error", reject);
          resolve();
        });
      });
      return port;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    }
  }
  throw new CliError(
    "UNAVAILABLE",
    `No free relay port in ${RELAY_PROBES} tries from ${start} (127.0.0.1, range ${RELAY_FIRST_PORT}-${RELAY_FIRST_PORT + RELAY_PORT_COUNT - 1}).`,
  );
}
