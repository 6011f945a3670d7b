import { createServer, request as httpRequest, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import { listenLoopback } from "@agent-computer/testing/emulator";

/**
 * Loopback addresses for host-form preview URLs. A signed preview URL names
 * its sandbox and token in its host (`https://<port>-<token>.<domain>`), a
 * name no resolver here knows; a tunnel is a loopback listener of its own
 * for one such host that forwards every request and upgrade to the
 * emulator's preview listener with that Host header (and
 * `X-Forwarded-Proto: https`), so a test reaches the URL as a client on the
 * internet would, path and query unchanged.
 */
export class PreviewTunnels {
  private readonly tunnels = new Map<string, Promise<string>>();
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();

  constructor(private readonly previewPort: () => number) {}

  /** The loopback URL that reaches `url` (a host-form preview URL), made once per host. */
  async open(url: string): Promise<string> {
    const signed = new URL(url);
    let base = this.tunnels.get(signed.host);
    if (!base) {
      base = this.listen(signed.host);
      this.tunnels.set(signed.host, base);
    }
    return `${await base}${signed.pathname}${signed.search}`;
  }

  /** The preview host a tunnel URL stands for (tests check what the proxy was asked). */
  hostOf(tunnelUrl: string): string | undefined {
    const port = new URL(tunnelUrl).port;
    for (const [host, base] of this.hostsByBase) if (new URL(base).port === port) return host;
    return undefined;
  }

  private readonly hostsByBase = new Map<string, string>();

  private async listen(host: string): Promise<string> {
    const server = createServer((req, res) => {
      const forward = httpRequest(
        {
          host: "127.0.0.1",
          port: this.previewPort(),
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host, "x-forwarded-proto": "https" },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
      req.pipe(forward);
    });
    server.on("upgrade", (req, socket, head) => {
      const upstream = connect(this.previewPort(), "127.0.0.1", () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) {
          const name = req.rawHeaders[i] as string;
          if (name.toLowerCase() !== "host") lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
        }
        lines.push(`Host: ${host}`, "X-Forwarded-Proto: https");
        upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      this.sockets.add(upstream);
      const end = () => {
        upstream.destroy();
        socket.destroy();
      };
      upstream.once("error", end);
      socket.once("error", end);
      upstream.once("close", () => {
        this.sockets.delete(upstream);
        socket.destroy();
      });
      socket.once("close", () => upstream.destroy());
    });
    server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    this.servers.push(server);
    const base = await listenLoopback(server);
    this.hostsByBase.set(host, base);
    return base;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
