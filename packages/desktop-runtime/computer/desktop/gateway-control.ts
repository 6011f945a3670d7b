import { createConnection, createServer, type Server } from "node:net";
import type { ErrorCode } from "@agent-computer/core";
import { CliError } from "./cli-error.js";
import type { ScreenMode } from "./gateway-files.js";

/**
 * What the `desktop` command asks its computer's screen gateway, one JSON
 * line per connection over the gateway's private control socket (0600 in
 * a 0700 folder), one JSON line back.
 */
export type GatewayRequest =
  | { op: "ping" }
  | { op: "grant"; bot: string; slot: number; incarnation: string; mode: ScreenMode; ttlMs: number }
  | {
      op: "grant-terminal";
      bot: string;
      slot: number;
      incarnation: string;
      /** The live control capability the terminal lives under; absent: the gateway grants one the terminal owns. */
      controlId?: string;
      ttlMs: number;
      /** The workspace home: the shells' HOME, and `<home>/bots/<bot>` their first directory. */
      home: string;
    }
  | { op: "revoke"; id: string }
  /** The host's key for the resident service (desktop-service.ts). */
  | { op: "service-key"; key: string }
  | { op: "close-slot"; slot: number };

export type GatewayReply =
  | ({ ok: true } & Record<string, unknown>)
  | { ok: false; error: { code: ErrorCode; message: string } };

const MAX_LINE = 64 * 1024;

/** Sends one request; rejects when nothing listens (ENOENT, ECONNREFUSED) or no answer comes in time. */
export function controlRequest(
  socketPath: string,
  request: GatewayRequest,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error("The screen gateway did not answer in time."), { code: "ETIMEDOUT" }));
    }, timeoutMs);
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (text.length > MAX_LINE) socket.destroy(new Error("The screen gateway's answer is too long."));
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("end", () => {
      clearTimeout(timer);
      let reply: GatewayReply;
      try {
        reply = JSON.parse(text.split("\n")[0] ?? "") as GatewayReply;
      } catch {
        reject(
          new CliError("UNAVAILABLE", "The screen gateway gave no answer; see its log in the desktop state folder."),
        );
        return;
      }
      if (reply.ok) resolve(reply);
      else reject(new CliError(reply.error.code, reply.error.message));
    });
  });
}

/** Serves the control socket: one request line, one reply line, then the connection ends. */
export function serveControl(
  socketPath: string,
  handle: (request: GatewayRequest) => Promise<Record<string, unknown>>,
): Promise<Server> {
  const server = createServer((socket) => {
    socket.setEncoding("utf8");
    let text = "";
    let answered = false;
    const answer = (reply: GatewayReply) => {
      if (answered) return;
      answered = true;
      socket.end(`${JSON.stringify(reply)}\n`);
    };
    socket.on("error", () => socket.destroy());
    socket.on("data", (chunk: string) => {
      text += chunk;
      const end = text.indexOf("\n");
      if (end < 0) {
        if (text.length > MAX_LINE) socket.destroy();
        return;
      }
      let request: GatewayRequest;
      try {
        request = JSON.parse(text.slice(0, end)) as GatewayRequest;
      } catch {
        answer({ ok: false, error: { code: "INVALID_ARGUMENT", message: "Not a JSON request." } });
        return;
      }
      handle(request).then(
        (value) => answer({ ...value, ok: true }),
        (error: unknown) =>
          answer({
            ok: false,
            error:
              error instanceof CliError
                ? { code: error.code, message: error.message }
                : { code: "UNAVAILABLE", message: `The screen gateway failed: ${(error as Error)?.message ?? error}` },
          }),
      );
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
