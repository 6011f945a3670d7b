import { PassThrough, Writable } from "node:stream";
import { AgentComputerError } from "@agent-computer/core";
import { Exec, type KubeConfig, type V1Status } from "@kubernetes/client-node";
import type WebSocket from "ws";
import type { PodAddress } from "./pod-address.js";

/** The `pods/exec` subprotocols this package speaks, best first. */
export const V5_CHANNEL = "v5.channel.k8s.io";
export const V4_CHANNEL = "v4.channel.k8s.io";

const STDIN = 0;
const CLOSE = 255;

/** How many bytes of stdin may wait in the socket before writing waits for them to drain. */
const STDIN_IN_FLIGHT = 8 * 1024 * 1024;
/** One websocket message of stdin at most. */
export const STDIN_CHUNK = 256 * 1024;

/** The command's end as the status channel reported it, or how the connection ended without one. */
export type PodExecEnd =
  | { kind: "exited"; exitCode: number }
  | { kind: "failed"; reason: string; message: string }
  | { kind: "cut"; message: string };

/** Receives output; return false to pause the connection until `resumeOutput()`. */
export type PodOutputHandler = (stream: "stdout" | "stderr", chunk: Buffer) => boolean | undefined;

/**
 * One `pods/exec` websocket: the command's stdin, stdout and stderr over the
 * channel protocol, its exit from the status channel. Opened through
 * @kubernetes/client-node's Exec, so the kubeconfig's server, TLS and
 * credentials apply exactly as for its REST calls. Stdin frames are written
 * to the socket here rather than piped through the client, because it sends
 * as fast as its source reads (no backpressure on a 200 MiB home) and,
 * under v4, can end stdin only by closing the whole connection.
 */
export class PodExecSession {
  readonly ended: Promise<PodExecEnd>;
  private end: PodExecEnd | undefined;
  private settle!: (end: PodExecEnd) => void;

  private constructor(
    private readonly socket: WebSocket,
    /** The negotiated subprotocol: v5 can half-close stdin, v4 cannot. */
    readonly protocol: string,
    statusHolder: { status?: PodExecEnd },
  ) {
    this.ended = new Promise((resolve) => {
      this.settle = (end) => {
        if (this.end) return;
        this.end = end;
        resolve(end);
      };
    });
    if (statusHolder.status) this.settle(statusHolder.status);
    statusHolder.status = undefined;
    socket.on("close", (code: number, reason: Buffer) =>
      this.settle({ kind: "cut", message: `the exec connection closed (${code}${reason.length ? ` ${reason}` : ""})` }),
    );
    socket.on("error", (error: Error) =>
      this.settle({ kind: "cut", message: `the exec connection failed (${error.message})` }),
    );
  }

  /**
   * Opens the exec. A refusal of the upgrade (the pod is missing, RBAC
   * forbids it) rejects with the HTTP status in `details.status`.
   */
  static async open(
    kubeConfig: KubeConfig,
    pod: PodAddress,
    argv: readonly string[],
    options: { stdin: boolean; onOutput: PodOutputHandler },
  ): Promise<PodExecSession> {
    let session: PodExecSession | undefined;
    const early: { status?: PodExecEnd } = {};
    const sink = (name: "stdout" | "stderr") =>
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          if (options.onOutput(name, chunk) === false) session?.pauseOutput();
          done();
        },
      });
    // The client asks for stdin only when given a stream. This one never
    // carries data: stdin is written to the socket here, with backpressure.
    const stdinPlaceholder = options.stdin ? new PassThrough() : null;
    let socket: WebSocket;
    try {
      socket = (await new Exec(kubeConfig).exec(
        pod.namespace,
        pod.name,
        pod.container,
        [...argv],
        sink("stdout"),
        sink("stderr"),
        stdinPlaceholder,
        false,
        (status) => {
          const end = statusEnd(status);
          if (session) session.settle(end);
          else early.status = end;
        },
      )) as unknown as WebSocket;
    } catch (error) {
      const text = String((error as { message?: string })?.message ?? (error as Error));
      const status = Number(/Unexpected server response: (\d{3})/.exec(text)?.[1]) || undefined;
      throw new AgentComputerError(
        "UNAVAILABLE",
        status
          ? `The API server refused the exec into pod ${pod.namespace}/${pod.name} (HTTP ${status}).`
          : `Could not open an exec into pod ${pod.namespace}/${pod.name}: the API server is unreachable.`,
        { details: { status }, retryable: status === undefined || status >= 500 },
      );
    }
    if (socket.protocol !== V5_CHANNEL && socket.protocol !== V4_CHANNEL) {
      socket.close();
      throw new AgentComputerError(
        "UNSUPPORTED",
        `The API server answered exec with subprotocol "${socket.protocol || "(none)"}"; this provider needs ${V5_CHANNEL} or ${V4_CHANNEL} (Kubernetes 1.4 or newer).`,
      );
    }
    session = new PodExecSession(socket, socket.protocol, early);
    return session;
  }

  /** True once the status arrived or the connection closed. */
  get hasEnded(): boolean {
    return this.end !== undefined;
  }

  /** Whether stdin can be ended while output still flows (v5); under v4 callers frame stdin themselves. */
  get canCloseStdin(): boolean {
    return this.protocol === V5_CHANNEL;
  }

  /** Sends stdin bytes, waiting while too much is still in flight. */
  async writeStdin(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.length; offset += STDIN_CHUNK) {
      const part = chunk.subarray(offset, offset + STDIN_CHUNK);
      const frame = Buffer.allocUnsafe(part.length + 1);
      frame[0] = STDIN;
      frame.set(part, 1);
      await this.send(frame);
    }
  }

  /** Ends stdin (v5's close frame for channel 0). */
  async closeStdin(): Promise<void> {
    if (!this.canCloseStdin) throw new Error("stdin cannot be closed under v4; frame it instead");
    await this.send(Buffer.from([CLOSE, STDIN]));
  }

  pauseOutput(): void {
    this.socket.pause();
  }

  resumeOutput(): void {
    this.socket.resume();
  }

  /** Closes the connection; the command itself keeps running (kill it with a second exec). */
  close(): void {
    this.socket.close();
    // A peer that never answers the close handshake must not hold the socket.
    setTimeout(() => this.socket.terminate(), 2000).unref();
  }

  private async send(frame: Buffer): Promise<void> {
    if (this.end) throw new AgentComputerError("UNAVAILABLE", `Could not send stdin: ${describeEnd(this.end)}.`);
    const sent = new Promise<void>((resolve, reject) =>
      this.socket.send(frame, { binary: true }, (error) => (error ? reject(error) : resolve())),
    );
    if (this.socket.bufferedAmount <= STDIN_IN_FLIGHT) {
      sent.catch(() => {});
      return;
    }
    await Promise.race([
      sent.catch((error: Error) => {
        throw new AgentComputerError("UNAVAILABLE", `Could not send stdin: ${error.message}.`);
      }),
      this.ended.then((end) => {
        throw new AgentComputerError("UNAVAILABLE", `Could not send stdin: ${describeEnd(end)}.`);
      }),
    ]);
  }
}

/** A short, secret-free description of how an exec ended. */
export function describeEnd(end: PodExecEnd): string {
  switch (end.kind) {
    case "exited":
      return `the command exited with ${end.exitCode}`;
    case "failed":
      return `the exec failed (${end.reason}: ${end.message})`;
    case "cut":
      return end.message;
  }
}

/** Reads the status channel's `Status` object: Success, a non-zero exit code, or another failure. */
function statusEnd(status: V1Status): PodExecEnd {
  if (status?.status === "Success") return { kind: "exited", exitCode: 0 };
  const exitCause = status?.details?.causes?.find((c) => c.reason === "ExitCode");
  if (status?.reason === "NonZeroExitCode" && exitCause && /^\d+$/.test(exitCause.message ?? "")) {
    return { kind: "exited", exitCode: Number(exitCause.message) };
  }
  return {
    kind: "failed",
    reason: status?.reason ?? "Failure",
    message: (status?.message ?? "no message").slice(0, 300),
  };
}
