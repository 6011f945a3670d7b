// The terminal host (issue 46): runs in a computer whose display stack lives
// in a container of its own, beside the bot's processes, so a person's
// terminal sees the bot's processes, its files as the bot sees them and its
// loopback servers, as the documents promise. The display's gateway still
// admits every terminal connection (its capabilities, tokens and control
// sessions); it opens each admitted one here and relays bytes. A shell here
// is the bot's own user in the bot's own container: the host gives whoever
// connects nothing the bot's processes do not already have, and the
// display's side trusts nothing it answers but bytes for the person's
// screen (docs/architecture.md §4, "Whose input a display takes").
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { isBotId } from "@agent-computer/core";
import { TERMINAL_HOST_PORT } from "../../src/desktop/display-apart-policy.js";
import type { DesktopState } from "./desktop-state.js";
import { GatewayLog } from "./gateway-log.js";
import { TerminalServers, type TerminalSession } from "./terminal-servers.js";

/**
 * The first line of every connection: this tag, a space, a JSON request.
 * No HTTP request line starts so, so a page of the display's browser that
 * sends one here (it can reach this port) is refused at its first line.
 */
export const TERMINAL_HOST_TAG = "agent-computer-terminal/1";
const MAX_REQUEST_BYTES = 4096;
const REQUEST_TIMEOUT_MS = 10_000;
const CONTROL_ID = /^[A-Za-z0-9_-]{22}$/;

/** What the gateway asks: `probe` answers whether shells can start; `open` is a shell, its bytes after the answer. */
export interface TerminalHostRequest {
  readonly op: "probe" | "open";
  readonly control: string;
  readonly bot: string;
  readonly home: string;
}

/** The request's session, or undefined for a request that is not one. */
export function sessionOfRequest(line: string): (TerminalSession & { op: TerminalHostRequest["op"] }) | undefined {
  if (!line.startsWith(`${TERMINAL_HOST_TAG} `)) return undefined;
  let request: Partial<TerminalHostRequest>;
  try {
    request = JSON.parse(line.slice(TERMINAL_HOST_TAG.length + 1)) as Partial<TerminalHostRequest>;
  } catch {
    return undefined;
  }
  const { op, control, bot, home } = request ?? {};
  if (op !== "probe" && op !== "open") return undefined;
  if (typeof control !== "string" || !CONTROL_ID.test(control) || !isBotId(bot)) return undefined;
  if (typeof home !== "string" || !home.startsWith("/") || home.includes("\0")) return undefined;
  return { op, controlId: control, bot, home };
}

/**
 * Reads one line (the request, or the answer) from `socket`, then hands
 * back whatever came after it to the socket's readers.
 */
export function readFirstLine(socket: Socket, timeoutMs = REQUEST_TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const fail = (why: string) => {
      cleanup();
      reject(new Error(why));
    };
    const timer = setTimeout(() => fail("no first line in time"), timeoutMs);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(0x0a);
      if (end < 0) {
        if (buffered.length > MAX_REQUEST_BYTES) fail("first line too long");
        return;
      }
      cleanup();
      const rest = buffered.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      resolve(buffered.subarray(0, end).toString("utf8"));
    };
    const onClose = () => fail("closed before its first line");
    const cleanup = () => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      socket.pause();
    };
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}

/**
 * The host's connections: each `open` gets a shell from the session's PTY
 * server, which runs while the session has connections and stops (its
 * shells hung up) when the last one closes, as the gateway's own servers
 * stop with their control capability.
 */
export class TerminalHost {
  private readonly open = new Map<string, number>();

  constructor(private readonly servers: TerminalServers) {}

  serve(client: Socket): void {
    client.on("error", () => client.destroy());
    readFirstLine(client).then(
      (line) => this.answer(client, line),
      () => client.destroy(),
    );
  }

  private async answer(client: Socket, line: string): Promise<void> {
    const session = sessionOfRequest(line);
    if (!session) {
      client.destroy();
      return;
    }
    if (session.op === "probe") {
      client.end(`${JSON.stringify({ ok: true })}\n`);
      return;
    }
    this.open.set(session.controlId, (this.open.get(session.controlId) ?? 0) + 1);
    client.once("close", () => this.closed(session.controlId));
    let shell: Socket;
    try {
      shell = await this.servers.connect(session);
    } catch (error) {
      client.end(`${JSON.stringify({ ok: false, error: (error as Error).message })}\n`);
      return;
    }
    shell.on("error", () => shell.destroy());
    shell.once("close", () => client.destroy());
    client.once("close", () => shell.destroy());
    client.write(`${JSON.stringify({ ok: true })}\n`);
    client.pipe(shell);
    shell.pipe(client);
    client.resume();
  }

  private closed(controlId: string): void {
    const left = (this.open.get(controlId) ?? 1) - 1;
    if (left > 0) {
      this.open.set(controlId, left);
      return;
    }
    this.open.delete(controlId);
    void this.servers.stop(controlId);
  }
}

/** The host's server, not yet listening: `runTerminalHost` serves it, tests listen on a port of their own. */
export function createTerminalHost(state: DesktopState): { server: Server; servers: TerminalServers } {
  const dir = join(state.dir, "terminal-host");
  const servers = new TerminalServers(join(dir, "terminals"), new GatewayLog(join(dir, "log")));
  servers.prepare();
  const host = new TerminalHost(servers);
  return { server: createServer((client) => host.serve(client)), servers };
}

/**
 * Serves until SIGTERM or SIGINT on every address of the computer (its pair
 * network with the display is the only one the display reaches it by), or
 * on `host` only (loopback, where the display shares it: in a pod the
 * pod's address is the cluster's to reach).
 * A port the bot took first is tried again every few seconds: the bot then
 * holds a person's terminals, which are its own shells anyway.
 */
export async function runTerminalHost(state: DesktopState, port = TERMINAL_HOST_PORT, host?: string): Promise<void> {
  const { server, servers } = createTerminalHost(state);
  for (;;) {
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen({ port, host, exclusive: true }, () => resolve(true));
    });
    if (listening) break;
    server.removeAllListeners("error");
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  await Promise.all(servers.controlIds().map((id) => servers.stop(id)));
}
