import { randomBytes } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger, ScreenEndpoint, TerminalEndpoint } from "@agent-computer/core";
import { WebSocket } from "ws";
import {
  createScreens,
  type ScreenAuthority,
  type ScreenAuthorityChange,
  type ScreenCapability,
  type ScreenCheckRequest,
  type ScreenEvent,
  type ScreenOpenRequest,
  type Screens,
  type ScreensOptions,
  type TerminalCapability,
  type TerminalOpenRequest,
} from "../src/index.js";
import { FakeGateway } from "./fake-gateway.js";

/** An authority backed by the fake gateway, whose answers a test changes. */
export class TestAuthority implements ScreenAuthority {
  readonly opened: ScreenOpenRequest[] = [];
  readonly openedTerminals: TerminalOpenRequest[] = [];
  readonly checks: ScreenCheckRequest[] = [];
  readonly revokedEndpoints: string[] = [];
  /** Every use an open socket reported (`inUse`). */
  readonly uses: { computerId: string; botId: string }[] = [];
  readonly endpoints: (ScreenEndpoint | TerminalEndpoint)[] = [];
  answer: () => unknown = async () => undefined;
  private readonly listeners = new Set<(change: ScreenAuthorityChange) => void>();

  constructor(private readonly gateway: FakeGateway) {}

  async open(request: ScreenOpenRequest) {
    this.opened.push(request);
    const endpoint = this.gateway.endpoint(request.mode, request.ttlMs);
    this.endpoints.push(endpoint);
    return {
      endpoint,
      revoke: async () => {
        this.revokedEndpoints.push(endpoint.id);
        this.gateway.revoke(endpoint.id);
      },
    };
  }

  async openTerminal(request: TerminalOpenRequest) {
    this.openedTerminals.push(request);
    const endpoint = this.gateway.terminalEndpoint(request.ttlMs, request.controlId);
    this.endpoints.push(endpoint);
    return {
      endpoint,
      revoke: async () => {
        this.revokedEndpoints.push(endpoint.id);
        this.gateway.revoke(endpoint.id);
      },
    };
  }

  check(request: ScreenCheckRequest): Promise<void> {
    this.checks.push(request);
    return this.answer() as Promise<void>;
  }

  async inUse(request: { computerId: string; botId: string }): Promise<void> {
    this.uses.push({ ...request });
  }

  watch(listener: (change: ScreenAuthorityChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  change(change: ScreenAuthorityChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

/**
 * Every event and log line of a test file, and every secret it saw, so one
 * test at the end can prove none of them leaked.
 */
export class LeakWatch {
  readonly lines: string[] = [];
  readonly secrets = new Set<string>();

  readonly logger: Logger = {
    debug: (message, fields) => this.lines.push(`${message} ${JSON.stringify(fields)}`),
    info: (message, fields) => this.lines.push(`${message} ${JSON.stringify(fields)}`),
    warn: (message, fields) => this.lines.push(`${message} ${JSON.stringify(fields)}`),
    error: (message, fields) => this.lines.push(`${message} ${JSON.stringify(fields)}`),
  };

  capability(capability: ScreenCapability): ScreenCapability {
    const sealed = capability.url.split("/c/")[1]!;
    for (const secret of [capability.url, capability.viewerUrl, sealed, sealed.slice(0, 40)]) this.secrets.add(secret);
    return capability;
  }

  terminal(capability: TerminalCapability): TerminalCapability {
    const sealed = capability.url.split("/t/")[1]!;
    for (const secret of [capability.url, capability.terminalUrl, sealed, sealed.slice(0, 40)])
      this.secrets.add(secret);
    return capability;
  }

  gateway(gateway: FakeGateway): void {
    this.secrets.add(gateway.hostPort);
    this.secrets.add("Bearer");
    this.secrets.add("authorization");
  }

  endpointsOf(authority: TestAuthority): void {
    for (const endpoint of authority.endpoints) {
      this.secrets.add(endpoint.token);
      this.secrets.add(endpoint.url);
    }
  }
}

export interface Harness {
  readonly screens: Screens;
  readonly gateway: FakeGateway;
  readonly authority: TestAuthority;
  readonly events: ScreenEvent[];
  readonly port: number;
  url(path: string): string;
  connect(capability: ScreenCapability | TerminalCapability | string, headers?: Record<string, string>): WebSocket;
  stop(): Promise<void>;
}

export async function startHarness(watch: LeakWatch, options: Partial<ScreensOptions> = {}): Promise<Harness> {
  const gateway = await new FakeGateway().start();
  watch.gateway(gateway);
  const authority = new TestAuthority(gateway);
  const events: ScreenEvent[] = [];
  const screens = createScreens({
    authority,
    secret: randomBytes(32),
    logger: watch.logger,
    onEvent: (event) => {
      events.push(event);
      watch.lines.push(JSON.stringify(event));
    },
    ...options,
  });
  const server: Server = createServer((req, res) => {
    if (!screens.handleRequest(req, res)) {
      res.writeHead(404);
      res.end("app 404");
    }
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    screens,
    gateway,
    authority,
    events,
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    connect: (capability, headers) =>
      new WebSocket(`ws://127.0.0.1:${port}${typeof capability === "string" ? capability : capability.url}`, {
        headers,
        perMessageDeflate: false,
      }),
    async stop() {
      watch.endpointsOf(authority);
      await screens.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.stop();
    },
  };
}

/** Resolves when the socket opens; rejects with the HTTP status when refused. */
export function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) => {
      reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers }));
      res.resume();
    });
    ws.once("error", reject);
  });
}

export function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    if (ws.readyState === ws.CLOSED) return resolve({ code: 1006, reason: "" });
    ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() }));
  });
}

/** Collects the bytes a socket receives. */
export function received(ws: WebSocket): { bytes(): Buffer; until(n: number): Promise<Buffer> } {
  const chunks: Buffer[] = [];
  ws.on("message", (data) => chunks.push(data as Buffer));
  return {
    bytes: () => Buffer.concat(chunks),
    async until(n) {
      for (let i = 0; i < 500; i++) {
        const all = Buffer.concat(chunks);
        if (all.length >= n) return all;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`got ${Buffer.concat(chunks).length} of ${n} bytes`);
    },
  };
}

export async function eventually<T>(probe: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

// RFB client messages, as noVNC sends them.
export const rfb = {
  version: Buffer.from("RFB 003.008\n", "latin1"),
  securityNone: Buffer.of(1),
  clientInit: Buffer.of(1),
  setEncodings: Buffer.concat([Buffer.of(2, 0, 0, 2), Buffer.of(0, 0, 0, 7, 0, 0, 0, 0)]),
  updateRequest: Buffer.of(3, 0, 0, 0, 0, 0, 0x07, 0x80, 0x04, 0x38),
  pointer: Buffer.of(5, 1, 0, 10, 0, 20),
  key: Buffer.of(4, 1, 0, 0, 0, 0, 0xff, 0x0d),
  cutText: (text: string) => {
    const body = Buffer.from(text, "latin1");
    const header = Buffer.alloc(8);
    header[0] = 6;
    header.writeInt32BE(body.length, 4);
    return Buffer.concat([header, body]);
  },
};

/**
 * Sends a websocket upgrade for `path` exactly as given (a WebSocket client
 * would normalise `..` away) and resolves with the HTTP status, 101 when
 * upgraded, or "destroyed" when the socket was dropped unanswered.
 */
export function rawUpgrade(port: number, path: string): Promise<number | "destroyed"> {
  return new Promise((resolve) => {
    const req = request({
      host: "127.0.0.1",
      port,
      path,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
        "Sec-WebSocket-Version": "13",
      },
    });
    req.on("upgrade", (_res, socket) => {
      socket.destroy();
      resolve(101);
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve("destroyed"));
    req.end();
  });
}
