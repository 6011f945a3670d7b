import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { gatewayProofMatches, isGatewayNonce, newGatewayNonce } from "@agent-computer/core";
import { type WebSocket, WebSocketServer } from "ws";
import {
  parseServiceMessage,
  SERVICE_KEY,
  SERVICE_PATH,
  type ServiceMessage,
  serviceKeyId,
  serviceProof,
} from "../../src/service/service-protocol.js";
import { CliError } from "./cli-error.js";
import type { DesktopState } from "./desktop-state.js";
import { LONG_LIVED_VERBS, runDesktopVerb } from "./desktop-verbs.js";
import { controlRequest } from "./gateway-control.js";
import type { GatewayLog } from "./gateway-log.js";
import { ensureGateway } from "./screen-verbs.js";
import { errorLine } from "./verb-errors.js";

export { SERVICE_PATH };

/** Hosts that handed a key over (workers, restarts) are remembered up to this many; the oldest goes first. */
const MAX_KEYS = 16;
const HANDSHAKE_TIMEOUT_MS = 5000;
const MAX_CALLS_PER_CONNECTION = 64;
const MAX_CALL_MS = 15 * 60_000;
/** An act batch with a long text, or browse input: far below this. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * The resident service (docs/architecture.md §4): the desktop verbs over one
 * authenticated websocket per host, hosted by the screen gateway so a
 * computer runs one resident process, not two. Each call runs the same
 * code as the `desktop` command (desktop-verbs.ts) in this process, so a
 * call costs a message, not a Node start and a 1 MB bundle load.
 */
export class DesktopService {
  private readonly keys = new Map<string, string>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  });
  private connections = 0;

  constructor(private readonly log: GatewayLog) {}

  /** A key the host handed over (`desktop service`, key on stdin). Never logged. */
  addKey(key: unknown): Record<string, unknown> {
    if (typeof key !== "string" || !SERVICE_KEY.test(key)) {
      throw new CliError("INVALID_ARGUMENT", "A service key is 32 random bytes in base64url.");
    }
    const id = serviceKeyId(key);
    this.keys.delete(id);
    this.keys.set(id, key);
    while (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    this.log.write("service-key", { keyId: id, keys: this.keys.size });
    return { keyId: id };
  }

  handles(url: string | undefined): boolean {
    return (url ?? "").split("?")[0] === SERVICE_PATH;
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.serve(ws));
  }

  private serve(ws: WebSocket): void {
    const connection = `s${++this.connections}`;
    const nonce = newGatewayNonce();
    let key: string | undefined;
    const calls = new Map<number, AbortController>();
    const send = (message: ServiceMessage) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
    };
    const refuse = (why: string) => {
      this.log.write("service-refuse", { conn: connection, why });
      ws.close(4401, "refused");
    };
    const handshake = setTimeout(() => refuse("no hello in time"), HANDSHAKE_TIMEOUT_MS);
    ws.on("error", () => ws.terminate());
    ws.on("close", () => {
      clearTimeout(handshake);
      for (const call of calls.values()) call.abort();
      if (key) this.log.write("service-close", { conn: connection, inFlight: calls.size });
    });
    ws.on("message", (data, isBinary) => {
      const message = isBinary ? undefined : parseServiceMessage(data);
      if (!message) return refuse("not a service message");
      if (!key) {
        if (message.t !== "hello" || !isGatewayNonce(message.nonce)) return refuse("expected a hello");
        const candidate = this.keys.get(String(message.keyId));
        if (!candidate || !gatewayProofMatches(serviceProof(candidate, "host", nonce, message.nonce), message.proof)) {
          return refuse("wrong key or proof");
        }
        clearTimeout(handshake);
        key = candidate;
        send({ t: "welcome", proof: serviceProof(key, "service", message.nonce, nonce) });
        this.log.write("service-open", { conn: connection });
        return;
      }
      if (message.t === "cancel") {
        calls.get(message.id)?.abort();
        return;
      }
      if (message.t !== "call") return refuse("unknown message");
      this.call(message, calls, send);
    });
    send({ t: "challenge", nonce });
  }

  private call(
    message: Extract<ServiceMessage, { t: "call" }>,
    calls: Map<number, AbortController>,
    send: (message: ServiceMessage) => void,
  ): void {
    const { id, argv, stdin, timeoutMs } = message;
    if (!Number.isSafeInteger(id) || calls.has(id)) return;
    const line = (value: Record<string, unknown>) => send({ t: "line", id, line: value });
    const end = () => send({ t: "end", id });
    if (
      !Array.isArray(argv) ||
      argv.length === 0 ||
      argv.length > 256 ||
      argv.some((a) => typeof a !== "string") ||
      LONG_LIVED_VERBS.has(argv[0] as string)
    ) {
      line(errorLine(new CliError("INVALID_ARGUMENT", "The service runs the desktop verbs, one argv per call.")));
      end();
      return;
    }
    if (calls.size >= MAX_CALLS_PER_CONNECTION) {
      line(errorLine(new CliError("LIMIT_EXCEEDED", `At most ${MAX_CALLS_PER_CONNECTION} calls at once.`)));
      end();
      return;
    }
    const controller = new AbortController();
    calls.set(id, controller);
    // The host enforces the caller's deadline; this one only ends work a vanished host left behind.
    const timer = setTimeout(
      () => controller.abort(),
      Math.min(MAX_CALL_MS, Number.isFinite(timeoutMs) ? timeoutMs + 5000 : MAX_CALL_MS),
    );
    runDesktopVerb(argv, {
      stdin: () => (typeof stdin === "string" ? stdin : ""),
      write: line,
      signal: controller.signal,
    })
      .catch((error: unknown) => {
        if (!(error instanceof CliError)) {
          this.log.write("service-call-failed", { verb: argv[0], error: (error as Error)?.message ?? String(error) });
        }
        line(errorLine(error));
      })
      .finally(() => {
        clearTimeout(timer);
        calls.delete(id);
        end();
      });
  }
}

/**
 * `desktop service`, run by the host through exec with its key on stdin:
 * starts the gateway that hosts the service when none runs, and hands the
 * key to it over the private control socket. The key is never in argv,
 * the environment, a file or a log.
 */
export async function handOverServiceKey(state: DesktopState, stdin: string): Promise<Record<string, unknown>> {
  const key = stdin.trim();
  if (!SERVICE_KEY.test(key)) {
    throw new CliError("INVALID_ARGUMENT", "desktop service reads the host's key (32 bytes, base64url) on stdin.");
  }
  const files = await ensureGateway(state);
  const reply = await controlRequest(files.controlSocket, { op: "service-key", key }, 15_000);
  return { keyId: reply.keyId, path: SERVICE_PATH };
}
