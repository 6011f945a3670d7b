// `desktop devtools-bridge SOCKET -- PROGRAM ARGS...` (docs/architecture.md §4,
// "Whose input a display takes", item 3): where the display shares the bot's
// loopback but not its files (a Kubernetes pod's display container),
// Chromium's DevTools must not listen on TCP. This process starts Chromium
// with `--remote-debugging-pipe` (it reads commands on fd 3 and writes
// answers and events on fd 4, each message JSON ended by a NUL) and offers
// the same protocol on a Unix socket in the display's own file system
// (0600), shaped like Chromium's own endpoint, so every in-computer client
// (cdp-connection.ts) only changes where it connects: GET /json/version and
// /json/list, and websockets at /devtools/browser and /devtools/page/<id>.
//
// One pipe, several clients (the resident service, a `desktop` command, the
// page engine): ids are remapped per client, not serialized. Each message
// sent on gets an id of the bridge's own, and its answer goes back to the
// client that sent it under the client's id; one client's slow call (an
// evaluate awaiting a promise) then holds no other's. A page connection is
// a flat session the bridge attaches for that client alone
// (Target.attachToTarget, flatten): its commands carry the session's id,
// only that session's answers and events reach it, and it is detached when
// the client goes. Events without a session go to every browser connection.
import { spawn } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex, Readable, Writable } from "node:stream";
import { WebSocketServer } from "ws";

/** The host part of the websocket URLs the bridge hands out; clients connect by the socket, not by it. */
const BRIDGE_HOST = "devtools.invalid";

interface Client {
  readonly send: (text: string) => void;
  /** The flat session of a page connection; undefined for the browser connection. */
  session?: string;
}

interface PendingCall {
  readonly client?: Client;
  readonly id?: number;
  readonly resolve?: (result: Record<string, unknown>) => void;
}

/** A started bridge: its browser's exit (the code) and a way to stop it. */
export interface StartedBridge {
  readonly exited: Promise<number>;
  stop(): void;
}

/** Runs until the program exits (SIGTERM and SIGINT stop it); its exit code becomes this process's. */
export async function runDevtoolsBridge(socketPath: string, program: string, args: readonly string[]): Promise<number> {
  const bridge = await startDevtoolsBridge(socketPath, program, args);
  process.once("SIGTERM", bridge.stop);
  process.once("SIGINT", bridge.stop);
  return bridge.exited;
}

/** Starts `program` with `--remote-debugging-pipe` and serves its DevTools on `socketPath` (0600). */
export async function startDevtoolsBridge(
  socketPath: string,
  program: string,
  args: readonly string[],
): Promise<StartedBridge> {
  const child = spawn(program, [...args, "--remote-debugging-pipe"], {
    stdio: ["ignore", "inherit", "inherit", "pipe", "pipe"],
  });
  const bridge = new PipeBridge(child.stdio[3] as Writable, child.stdio[4] as Readable);
  rmSync(socketPath, { force: true });
  const server = createServer((req, res) => void bridge.answer(req, res));
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => bridge.upgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // Made 0600 before any client could connect: the umask keeps others out while it is created.
    const mask = process.umask(0o177);
    server.listen(socketPath, () => {
      process.umask(mask);
      chmodSync(socketPath, 0o600);
      resolve();
    });
  });
  const exited = new Promise<number>((resolve) => child.once("exit", (c, s) => resolve(c ?? (s ? 1 : 0)))).then(
    (code) => {
      bridge.close();
      server.close();
      rmSync(socketPath, { force: true });
      return code;
    },
  );
  return { exited, stop: () => child.kill("SIGTERM") };
}

class PipeBridge {
  private nextId = 1;
  private readonly pending = new Map<number, PendingCall>();
  private readonly browserClients = new Set<Client>();
  private readonly sessions = new Map<string, Client>();
  private buffered = Buffer.alloc(0);
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 * 1024 });

  constructor(
    private readonly toBrowser: Writable,
    fromBrowser: Readable,
  ) {
    fromBrowser.on("data", (chunk: Buffer) => this.onPipeData(chunk));
    toBrowser.on("error", () => {});
  }

  /** The HTTP endpoints clients read: the browser's websocket, and its pages as Chromium lists them. */
  async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    try {
      if (req.url === "/json/version") {
        const version = await this.call("Browser.getVersion", {});
        return reply(200, { ...version, webSocketDebuggerUrl: `ws://${BRIDGE_HOST}/devtools/browser` });
      }
      if (req.url === "/json/list" || req.url === "/json") {
        const { targetInfos } = (await this.call("Target.getTargets", {})) as { targetInfos: TargetInfo[] };
        return reply(200, targetInfos.map(listedTarget));
      }
      reply(404, { error: "not found" });
    } catch (error) {
      reply(503, { error: (error as Error).message });
    }
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const page = /^\/devtools\/page\/([A-Za-z0-9]+)$/.exec(req.url ?? "")?.[1];
    if (req.url !== "/devtools/browser" && !page) {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const client: Client = { send: (text) => ws.send(text) };
      const queued: string[] = [];
      let attached = false;
      ws.on("message", (data) => {
        const text = data.toString();
        if (attached) this.fromClient(client, text);
        else queued.push(text);
      });
      ws.on("close", () => this.drop(client));
      ws.on("error", () => ws.terminate());
      const ready = page ? this.attach(client, page) : Promise.resolve(this.browserClients.add(client));
      ready.then(
        () => {
          attached = true;
          for (const text of queued.splice(0)) this.fromClient(client, text);
        },
        () => ws.close(1011, "no such target"),
      );
    });
  }

  private async attach(client: Client, targetId: string): Promise<void> {
    const { sessionId } = (await this.call("Target.attachToTarget", { targetId, flatten: true })) as {
      sessionId: string;
    };
    client.session = sessionId;
    this.sessions.set(sessionId, client);
  }

  private drop(client: Client): void {
    this.browserClients.delete(client);
    for (const [id, call] of this.pending) if (call.client === client) this.pending.delete(id);
    if (!client.session) return;
    this.sessions.delete(client.session);
    void this.call("Target.detachFromTarget", { sessionId: client.session }).catch(() => {});
  }

  /** A client's command, sent on under an id of the bridge's own (and its session, for a page). */
  private fromClient(client: Client, text: string): void {
    let message: { id?: number; method?: string; params?: unknown; sessionId?: string };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof message.id !== "number" || typeof message.method !== "string") return;
    const id = this.nextId++;
    this.pending.set(id, { client, id: message.id });
    const sessionId = client.session ?? message.sessionId;
    this.write({ id, method: message.method, params: message.params ?? {}, ...(sessionId ? { sessionId } : {}) });
  }

  /** A command of the bridge itself. */
  private call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`the browser did not answer ${method}`));
      }, 10_000);
      this.pending.set(id, {
        resolve: (result) => {
          clearTimeout(timer);
          if ("error" in result) reject(new Error(String((result.error as { message?: string }).message)));
          else resolve(result.result as Record<string, unknown>);
        },
      });
      this.write({ id, method, params });
    });
  }

  /** Ends every client's connection (the browser is gone). */
  close(): void {
    for (const ws of this.wss.clients) ws.terminate();
  }

  private write(message: Record<string, unknown>): void {
    this.toBrowser.write(`${JSON.stringify(message)}\0`);
  }

  private onPipeData(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (let end = this.buffered.indexOf(0); end >= 0; end = this.buffered.indexOf(0)) {
      const text = this.buffered.subarray(0, end).toString("utf8");
      this.buffered = this.buffered.subarray(end + 1);
      this.fromBrowser(text);
    }
  }

  /** An answer goes to the client that asked, under its own id; an event to its session's client, or every browser client. */
  private fromBrowser(text: string): void {
    const message = JSON.parse(text) as Record<string, unknown> & { id?: number; sessionId?: string };
    if (typeof message.id === "number") {
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (call.resolve) {
        call.resolve(message);
        return;
      }
      // A page client never sees the session it rides on.
      const answer: Record<string, unknown> = { ...message, id: call.id };
      if (call.client?.session) delete answer.sessionId;
      call.client?.send(JSON.stringify(answer));
      return;
    }
    if (message.sessionId) {
      const client = this.sessions.get(message.sessionId);
      if (client) {
        const { sessionId: _session, ...event } = message;
        client.send(JSON.stringify(event));
      }
      return;
    }
    for (const client of this.browserClients) client.send(text);
  }
}

interface TargetInfo {
  targetId: string;
  type: string;
  title: string;
  url: string;
}

/** A target as Chromium's /json/list shows it, its websocket on the bridge. */
function listedTarget(target: TargetInfo): Record<string, string> {
  return {
    id: target.targetId,
    type: target.type,
    title: target.title,
    url: target.url,
    webSocketDebuggerUrl: `ws://${BRIDGE_HOST}/devtools/page/${target.targetId}`,
  };
}
