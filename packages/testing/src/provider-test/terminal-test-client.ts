import type { TerminalEndpoint } from "@agent-computer/core";
import WebSocket from "ws";
import type { Closed } from "./rfb-test-client.js";

const ESC = String.fromCharCode(0x1b);
const BEL = String.fromCharCode(0x07);
/** OSC (window titles), CSI (colours, modes) and charset switches. */
const ESCAPES = new RegExp(
  `${ESC}\\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\\\)|${ESC}\\[[0-9;?]*[ -/]*[@-~]|${ESC}[()][0-9A-Za-z]`,
  "g",
);

/**
 * A terminal client over a gateway websocket, speaking what the host-side
 * terminal page speaks: binary frames both ways are terminal bytes, a text
 * frame is JSON control (`resize`).
 */
export class TerminalTestClient {
  private raw = "";
  private readonly decoder = new TextDecoder();
  private readonly waiters = new Set<() => void>();
  readonly closed: Promise<Closed & { reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.raw += this.decoder.decode(data, { stream: true });
      for (const wake of this.waiters) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })),
    );
    ws.on("error", () => {});
  }

  /** Opens the websocket; with `token`, as the host side would (a bearer token), else as a browser through the screens proxy. */
  static open(endpoint: Pick<TerminalEndpoint, "url"> & { token?: string }): Promise<TerminalTestClient> {
    return new Promise((resolve, reject) => {
      const headers = endpoint.token === undefined ? {} : { Authorization: `Bearer ${endpoint.token}` };
      const ws = new WebSocket(endpoint.url, { headers });
      const client = new TerminalTestClient(ws);
      ws.once("open", () => resolve(client));
      ws.once("unexpected-response", (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
      ws.once("error", reject);
    });
  }

  /**
   * Everything the shell wrote so far, as a reader sees it: escape
   * sequences (bash's bracketed-paste switches, colours) removed and line
   * ends as "\n".
   */
  get output(): string {
    return this.raw.replace(ESCAPES, "").replace(/\r+\n/g, "\n").replace(/\r/g, "");
  }

  /** Keystrokes, as a binary frame. */
  type(keys: string): void {
    this.ws.send(Buffer.from(keys, "utf8"), { binary: true });
  }

  resize(cols: number, rows: number): void {
    this.ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  /** Waits until the output (from its `from`th character on) matches. */
  async waitFor(pattern: RegExp, timeoutMs = 15_000, from = 0): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.output.slice(from).match(pattern);
      if (match) return match;
      const left = deadline - Date.now();
      if (left <= 0 || this.ws.readyState !== WebSocket.OPEN) {
        throw new Error(
          `no ${pattern} in terminal output (state ${this.ws.readyState}): ${JSON.stringify(this.output)}`,
        );
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 200));
        this.waiters.add(wake);
      });
    }
  }

  /** Runs a command line and returns what matched `pattern` in its output. */
  async run(line: string, pattern: RegExp): Promise<RegExpMatchArray> {
    const from = this.output.length;
    this.type(`${line}\n`);
    return this.waitFor(pattern, 15_000, from);
  }

  close(): void {
    this.ws.close();
  }
}
