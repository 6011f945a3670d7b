import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentComputerError } from "@agent-computer/core";
import { ComputerToolSession } from "@agent-computer/runtime";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { bearerVerdict, checkedToken } from "./bearer-token.js";
import { type ComputerMcpServerOptions, createComputerMcpServer } from "./computer-mcp-server.js";
import { McpSessionTable } from "./mcp-session-table.js";
import { defaultOriginRules, originRefusal, originRulesFrom } from "./request-origin-guard.js";

/** Options of `serveMcpHttp`. */
export interface ServeMcpHttpOptions extends Omit<ComputerMcpServerOptions, "session"> {
  /** The bearer token every request must carry (`Authorization: Bearer <token>`); at least 32 characters. */
  token: string;
  /** Port (default 0: any free one). */
  port?: number;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /**
   * Host names (no port) a request's `Host` header may name; any other is
   * 403 (DNS rebinding protection). Default: the bound address, and for a
   * loopback one also `localhost`, `127.0.0.1` and `[::1]`.
   */
  allowedHosts?: readonly string[];
  /**
   * Origins (`https://app.example`) a browser's `Origin` header may name;
   * any other is 403. A request without `Origin` (a client that is not a
   * browser) passes. Default: `http://<allowed host>:<port>` of each
   * default allowed host.
   */
  allowedOrigins?: readonly string[];
  /** A session with no request in flight for this long is closed (default 30 minutes). */
  sessionIdleMs?: number;
  /**
   * The most MCP sessions open at once (default 64). When full, a new
   * client takes the place of the longest-idle session; when every session
   * has a request in flight, it is refused with 503.
   */
  maxSessions?: number;
}

/** A running HTTP transport. */
export interface McpHttpServer {
  /** `http://<host>:<port>/mcp`. */
  readonly url: string;
  /** How many MCP sessions are open. */
  sessions(): number;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;
const DEFAULT_MAX_SESSIONS = 64;

interface OpenSession {
  transport: StreamableHTTPServerTransport;
  close(): Promise<void>;
}

/**
 * Serves the tools of one (computer, bot) over MCP streamable HTTP at
 * `/mcp`, with sessions: each client's `initialize` opens its own MCP
 * server and its own tool session, so frame de-duplication and the
 * repeated-action guard are per client (a client that never saw a frame
 * gets it), and `notifications/tools/list_changed` reaches clients on their
 * GET stream. A request whose `Host` or `Origin` is not allowed is 403;
 * every other needs the bearer token (401 without it, 401 with
 * `invalid_token` for another). Sessions idle for `sessionIdleMs` close,
 * and at most `maxSessions` are open (mcp-session-table.ts).
 */
export async function serveMcpHttp(options: ServeMcpHttpOptions): Promise<McpHttpServer> {
  const token = checkedToken(options.token);
  const limits = {
    idleMs: positiveInteger(options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS, "sessionIdleMs"),
    maxSessions: positiveInteger(options.maxSessions ?? DEFAULT_MAX_SESSIONS, "maxSessions"),
  };
  const completeRules = originRulesFrom(options);
  const table = new McpSessionTable<OpenSession>(limits);
  let rules = { allowedHosts: [] as readonly string[], allowedOrigins: [] as readonly string[] };
  const http = createServer((req, res) => {
    void answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
    });
  });

  async function answer(req: IncomingMessage, res: ServerResponse) {
    if (req.url?.split("?")[0] !== "/mcp") return void res.writeHead(404).end();
    const refusal = originRefusal(req.headers, rules);
    if (refusal) return void jsonRpcError(res, 403, refusal);
    const verdict = bearerVerdict(req.headers.authorization, token);
    if (verdict !== "matches") return void unauthorized(res, verdict);
    const id = req.headers["mcp-session-id"];
    const known = typeof id === "string" ? table.get(id) : undefined;
    if (known && typeof id === "string") {
      table.track(id, res);
      return known.transport.handleRequest(req, res);
    }
    // An id this server never gave, or a session it closed: the client must initialize again (404, as the transport's specification says).
    if (id !== undefined) return void jsonRpcError(res, 404, "No open MCP session with that id; initialize again.");
    if (req.method !== "POST") return void jsonRpcError(res, 400, "No MCP session; initialize first.");
    const body = await readJson(req);
    if (!isInitializeRequest(body)) return void jsonRpcError(res, 400, "No MCP session; initialize first.");
    if (!(await table.makeRoom())) {
      return void jsonRpcError(
        res,
        503,
        `All ${limits.maxSessions} MCP sessions have a request in flight; close one (DELETE /mcp) or try again later.`,
      );
    }
    let initialized = false;
    const session = await openSession(options, table, () => {
      initialized = true;
    });
    try {
      await session.transport.handleRequest(req, res, body);
    } finally {
      // An initialize the transport refused opened nothing: free its place and its server.
      if (!initialized) {
        table.abandoned();
        await session.close();
      }
    }
  }

  await listenOn(http, options.port ?? 0, options.host ?? "127.0.0.1");
  const { address, port } = http.address() as AddressInfo;
  rules = completeRules(defaultOriginRules(address, port));
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/mcp`,
    sessions: () => table.size,
    async close() {
      await table.closeAll();
      http.closeAllConnections();
      await new Promise<void>((resolve, reject) => http.close((e) => (e ? reject(e) : resolve())));
    },
  };
}

async function openSession(
  options: ServeMcpHttpOptions,
  table: McpSessionTable<OpenSession>,
  onInitialized: () => void,
): Promise<OpenSession> {
  const toolSession = new ComputerToolSession({
    run: options.run,
    capabilities: options.capabilities,
    vision: options.vision ?? true,
    ...(options.onActivity ? { onActivity: options.onActivity } : {}),
  });
  const { server } = createComputerMcpServer({ ...options, session: toolSession });
  let entry: OpenSession | undefined;
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      if (!entry) return;
      onInitialized();
      table.opened(id, entry);
    },
    onsessionclosed: (id) => {
      table.forget(id);
    },
  });
  entry = {
    transport,
    async close() {
      await transport.close();
      await server.close();
    },
  };
  transport.onclose = () => {
    if (transport.sessionId) table.forget(transport.sessionId);
  };
  await server.connect(transport);
  return entry;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    // The SDK's own limit for a message body.
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}

function jsonRpcError(res: ServerResponse, status: number, message: string) {
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

function unauthorized(res: ServerResponse, verdict: "missing" | "wrong") {
  // RFC 6750: no token is a bare challenge; another token is invalid_token.
  const challenge = `Bearer realm="agent-computer-mcp"${verdict === "wrong" ? ', error="invalid_token"' : ""}`;
  res
    .writeHead(401, { "www-authenticate": challenge, "content-type": "text/plain" })
    .end(
      verdict === "missing"
        ? "A bearer token is required: Authorization: Bearer <MCP_AUTH_TOKEN>."
        : "The bearer token is not this server's MCP_AUTH_TOKEN: check the token the client sends.",
    );
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new AgentComputerError("INVALID_ARGUMENT", `${name} must be a positive whole number, got ${value}.`);
  return value;
}

/** Listens, or says why not in a sentence (a port in use is CONFLICT), instead of an unhandled error event. */
function listenOn(server: ReturnType<typeof createServer>, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException) => {
      const inUse = error.code === "EADDRINUSE";
      reject(
        new AgentComputerError(
          inUse ? "CONFLICT" : "UNAVAILABLE",
          `Cannot listen on ${host}:${port}: ${inUse ? "the port is in use; set MCP_HTTP_PORT to a free one" : (error.code ?? error.message)}.`,
          { cause: error, retryable: false },
        ),
      );
    };
    server.once("error", refused);
    server.listen(port, host, () => {
      server.off("error", refused);
      resolve();
    });
  });
}
