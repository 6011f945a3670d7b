import type { Socket } from "node:net";
import {
  AgentComputerError,
  type ErrorCode,
  gatewayProofMatches,
  newGatewayNonce,
  type OpContext,
} from "@agent-computer/core";
import WebSocket from "ws";
import { timedOut } from "../desktop/desktop-command.js";
import {
  newServiceKey,
  parseServiceMessage,
  type ServiceMessage,
  serviceKeyId,
  serviceProof,
} from "./service-protocol.js";

/** Why a call ended before its last line: the caller decides what its partial lines mean (act does). */
export interface ServiceCallCut {
  readonly code: ErrorCode;
  readonly message: string;
}

export interface ServiceCallResult {
  readonly lines: Record<string, unknown>[];
  readonly cut?: ServiceCallCut;
}

export interface ServiceCall {
  readonly argv: string[];
  readonly stdin?: string;
  readonly timeoutMs: number;
  /** The caller's context: its signal cancels the call in the computer; its deadline bounds connecting. */
  readonly ctx: OpContext;
}

/** What the client needs from its machine: where the service listens, and a way to hand it the key. */
export interface ServiceEndpoint {
  /** The websocket URL of the service (the screen gateway's port, SERVICE_PATH). */
  url(ctx: OpContext): Promise<string>;
  /** Runs `desktop service` through exec with the key on stdin; starts the gateway when none runs. */
  handOver(key: string, ctx: OpContext): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 15_000;
/**
 * How long a connection with no call in flight stays open. A machine object
 * has no end of life (a runtime drops it when its machine stops or is
 * replaced), so a connection it opened must close by itself or it stays for
 * the life of the process: the 10-minute soak held ~20 more sockets per
 * minute until this. Opening again costs one handshake, no exec (the key
 * stays handed over).
 */
export const SERVICE_IDLE_CLOSE_MS = 30_000;
/** Observations of a large screen are tens of MB of base64. */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** A connection that did not come up; nothing was sent on it, so the caller may use another way. */
export class ServiceUnreachable extends AgentComputerError {}

/**
 * The host's end of the resident service (docs/architecture.md §4): one
 * websocket per machine, many calls at once, each with an id. The key is
 * made here, handed over through exec's stdin, and proven (never sent) in
 * the handshake; the service must prove it too before any call goes out.
 * A dropped connection fails its calls in flight as UNAVAILABLE (retryable)
 * and the next call connects again, handing the key over again when the
 * service restarted without it.
 */
export class DesktopServiceClient {
  private readonly key = newServiceKey();
  private handedOver = false;
  private connection?: Promise<Connection>;

  constructor(
    private readonly endpoint: ServiceEndpoint,
    private readonly idleCloseMs = SERVICE_IDLE_CLOSE_MS,
  ) {}

  /** Runs one verb; throws ServiceUnreachable when no connection came up (nothing ran). */
  async call(call: ServiceCall): Promise<ServiceCallResult> {
    const connection = await this.connected(call.ctx);
    return connection.call(call);
  }

  /** Closes the connection; the next call opens a new one. */
  close(): void {
    const current = this.connection;
    this.connection = undefined;
    void current?.then(
      (c) => c.close(),
      () => {},
    );
  }

  private connected(ctx: OpContext): Promise<Connection> {
    const current = this.connection;
    if (current) {
      return current.then(
        (c) => (c.open ? c : this.reconnect(current, ctx)),
        () => this.reconnect(current, ctx),
      );
    }
    return this.reconnect(undefined, ctx);
  }

  private reconnect(stale: Promise<Connection> | undefined, ctx: OpContext): Promise<Connection> {
    if (this.connection !== stale) return this.connected(ctx);
    const next = this.open(ctx);
    this.connection = next;
    next.catch(() => {
      if (this.connection === next) this.connection = undefined;
    });
    return next;
  }

  private async open(ctx: OpContext): Promise<Connection> {
    if (!this.handedOver) {
      await this.handOver(ctx);
      return this.handshake(ctx);
    }
    try {
      return await this.handshake(ctx);
    } catch (error) {
      // The service restarted (its keys are in memory only) or is not running: hand the key over again.
      if (ctx.signal?.aborted) throw error;
      await this.handOver(ctx);
      return this.handshake(ctx);
    }
  }

  private async handOver(ctx: OpContext): Promise<void> {
    try {
      await this.endpoint.handOver(this.key, ctx);
      this.handedOver = true;
    } catch (error) {
      if (AgentComputerError.is(error) && (error.code === "ABORTED" || error.code === "TIMEOUT")) throw error;
      throw unreachable(`the service could not be started: ${AgentComputerError.is(error) ? error.message : error}`);
    }
  }

  private async handshake(ctx: OpContext): Promise<Connection> {
    let url: string;
    try {
      url = await this.endpoint.url(ctx);
    } catch (error) {
      throw unreachable(`no port URL: ${AgentComputerError.is(error) ? error.message : error}`);
    }
    return Connection.open(url, this.key, this.idleCloseMs, ctx.signal);
  }
}

const unreachable = (why: string) =>
  new ServiceUnreachable("UNAVAILABLE", `The computer's desktop service is not reachable (${why}).`);

const abortError = (reason: unknown) =>
  AgentComputerError.is(reason)
    ? reason
    : new AgentComputerError("ABORTED", "The desktop call was aborted by the caller.");

/** One authenticated websocket and the calls in flight on it. */
class Connection {
  open = true;
  private nextId = 1;
  private readonly pending = new Map<number, (message: ServiceMessage | { t: "lost" }) => void>();
  private idleTimer?: NodeJS.Timeout;

  private constructor(
    private readonly ws: WebSocket,
    private readonly socket: Socket | undefined,
    private readonly idleCloseMs: number,
  ) {
    ws.on("message", (data) => {
      const message = parseServiceMessage(data);
      if (message && (message.t === "line" || message.t === "end")) this.pending.get(message.id)?.(message);
    });
    ws.on("close", () => this.lost());
    ws.on("error", () => this.lost());
    this.idle();
  }

  static open(url: string, key: string, idleCloseMs: number, signal?: AbortSignal): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const nonce = newGatewayNonce();
      let socket: Socket | undefined;
      let settled = false;
      const ws = new WebSocket(url, {
        maxPayload: MAX_MESSAGE_BYTES,
        perMessageDeflate: false,
        handshakeTimeout: CONNECT_TIMEOUT_MS,
      });
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        ws.terminate();
        reject(signal?.aborted ? abortError(signal.reason) : unreachable(why));
      };
      const onAbort = () => fail("aborted");
      const timer = setTimeout(() => fail("no handshake in time"), CONNECT_TIMEOUT_MS);
      signal?.addEventListener("abort", onAbort, { once: true });
      ws.on("upgrade", (response) => {
        socket = response.socket as Socket;
      });
      ws.on("unexpected-response", (_req, res) => fail(`HTTP ${res.statusCode}`));
      ws.on("error", (error) => fail(error.message));
      ws.on("close", (code) => fail(code === 4401 ? "it refused this host's key" : `closed (${code})`));
      let challenge: string | undefined;
      ws.on("message", function onMessage(data) {
        const message = parseServiceMessage(data);
        if (!challenge) {
          if (message?.t !== "challenge" || typeof message.nonce !== "string") return fail("no challenge");
          challenge = message.nonce;
          ws.send(
            JSON.stringify({
              t: "hello",
              keyId: serviceKeyId(key),
              nonce,
              proof: serviceProof(key, "host", challenge, nonce),
            } satisfies ServiceMessage),
          );
          return;
        }
        // The service proves it holds the key before the host sends anything that matters.
        if (
          message?.t !== "welcome" ||
          !gatewayProofMatches(serviceProof(key, "service", nonce, challenge), message.proof)
        ) {
          return fail("it could not prove it holds the key; nothing was sent");
        }
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        ws.off("message", onMessage);
        ws.removeAllListeners("close");
        ws.removeAllListeners("error");
        resolve(new Connection(ws, socket, idleCloseMs));
      });
    });
  }

  call(call: ServiceCall): Promise<ServiceCallResult> {
    if (!this.open) throw unreachable("the connection closed");
    const id = this.nextId++;
    const lines: Record<string, unknown>[] = [];
    const signal = call.ctx.signal;
    return new Promise((resolve, reject) => {
      const finish = (result: ServiceCallResult | AgentComputerError) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.pending.delete(id);
        this.idle();
        if (result instanceof AgentComputerError) reject(result);
        else resolve(result);
      };
      const cancel = () => {
        if (this.ws.readyState === WebSocket.OPEN)
          this.ws.send(JSON.stringify({ t: "cancel", id } satisfies ServiceMessage));
      };
      const onAbort = () => {
        cancel();
        finish(abortError(signal?.reason));
      };
      const timer = setTimeout(() => {
        cancel();
        finish({
          lines,
          cut: timedOut(call.argv[0], call.timeoutMs),
        });
      }, call.timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, (message) => {
        if (message.t === "line") lines.push(message.line);
        else if (message.t === "end") finish({ lines });
        else {
          finish({
            lines,
            cut: {
              code: "UNAVAILABLE",
              message: `The connection to the computer's desktop service dropped during "${call.argv[0]}"; try again.`,
            },
          });
        }
      });
      clearTimeout(this.idleTimer);
      this.socket?.ref();
      this.ws.send(
        JSON.stringify({
          t: "call",
          id,
          argv: call.argv,
          timeoutMs: call.timeoutMs,
          ...(call.stdin === undefined ? {} : { stdin: call.stdin }),
        } satisfies ServiceMessage),
      );
    });
  }

  close(): void {
    this.ws.close();
    this.lost();
  }

  private lost(): void {
    if (!this.open) return;
    this.open = false;
    clearTimeout(this.idleTimer);
    for (const settle of [...this.pending.values()]) settle({ t: "lost" });
  }

  /** An idle connection must not keep the host process alive, and closes after `idleCloseMs` (SERVICE_IDLE_CLOSE_MS). */
  private idle(): void {
    if (this.pending.size > 0) return;
    this.socket?.unref();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.pending.size === 0) this.close();
    }, this.idleCloseMs);
    this.idleTimer.unref();
  }
}
