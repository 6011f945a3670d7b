import { randomUUID } from "node:crypto";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { type ScreenPath, screenPathOf } from "../proxy/screen-path.js";
import type { ScreenEvent } from "../screen-event.js";
import { terminalPage } from "../terminal/terminal-page.js";
import { XtermFiles } from "../terminal/xterm-files.js";
import { NovncFiles } from "../viewer/novnc-files.js";
import { viewerPage } from "../viewer/viewer-page.js";

/** What the page server works with. */
interface PageServerParts {
  readonly publicPath: string;
  /** The pages' CSP `frame-ancestors`. */
  readonly frameAncestors: string;
  readonly emit: (event: ScreenEvent) => void;
  readonly clock: () => number;
}

/** One HTTP request, from `handleRequest` on. */
interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** Random per request, for events. */
  readonly connectionId: string;
}

type HttpFailure = Extract<ScreenEvent, { type: "screen.proxy.http_failed" }>["reason"];

/** An HTML page and the Content-Security-Policy it is served with. */
interface Page {
  readonly html: string;
  readonly contentSecurityPolicy: string;
}

/**
 * Plain HTTP under `publicPath` (`Screens.handleRequest`): the viewer page
 * and its noVNC modules, the terminal page and its xterm files, 426 for a
 * capability path, 404 for the rest. Pages and files are made or read on
 * first use and kept.
 */
export class PageServer {
  private novnc: NovncFiles | undefined;
  private xterm: XtermFiles | undefined;
  private readonly pages: { viewer?: Page; terminal?: Page } = {};

  constructor(private readonly parts: PageServerParts) {}

  handleRequest(request: IncomingMessage, response: ServerResponse): boolean {
    const path = screenPathOf(request.url, this.parts.publicPath);
    if (path.kind === "outside") return false;
    const exchange: Exchange = { request, response, connectionId: randomUUID() };
    if (path.kind === "capability") this.fail(exchange, 426, "upgrade_required");
    else if (path.kind === "invalid") this.fail(exchange, 404, "not_found");
    else if (request.method !== "GET" && request.method !== "HEAD") this.fail(exchange, 405, "method_not_allowed");
    else if (path.kind === "viewer" || path.kind === "terminal-page")
      this.sendPage(exchange, path.kind === "viewer" ? this.viewer() : this.terminal());
    else this.sendFile(exchange, path);
    return true;
  }

  private sendPage(exchange: Exchange, page: Page): void {
    send(
      exchange,
      200,
      {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Length": String(Buffer.byteLength(page.html)),
        "Cache-Control": "no-store, no-transform",
        "Content-Security-Policy": page.contentSecurityPolicy,
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
      },
      page.html,
    );
  }

  private sendFile(exchange: Exchange, path: Extract<ScreenPath, { kind: "asset" | "xterm" }>): void {
    const file = this.fileOf(path);
    if (!file) {
      this.fail(exchange, 404, "not_found");
      return;
    }
    file.then(
      (found) => {
        if (!found) return this.fail(exchange, 404, "not_found");
        send(
          exchange,
          200,
          {
            "Content-Type": found.contentType,
            "Content-Length": String(found.bytes.length),
            // The version is in the path: a new noVNC or xterm is a new URL.
            "Cache-Control": "public, max-age=31536000, immutable, no-transform",
            "X-Content-Type-Options": "nosniff",
          },
          found.bytes,
        );
      },
      () => this.fail(exchange, 500, "asset_unreadable"),
    );
  }

  /** The file a path names, read; undefined at once for a noVNC version other than the installed one. */
  private fileOf(
    path: Extract<ScreenPath, { kind: "asset" | "xterm" }>,
  ): Promise<{ bytes: Buffer; contentType: string } | undefined> | undefined {
    if (path.kind === "xterm") return this.xtermFiles().read(path.name);
    const novnc = this.novncFiles();
    if (path.version !== novnc.version) return undefined;
    return novnc
      .read(path.file)
      .then((bytes) => (bytes ? { bytes, contentType: "text/javascript; charset=utf-8" } : undefined));
  }

  private fail(exchange: Exchange, status: number, reason: HttpFailure): void {
    const { emit, clock } = this.parts;
    emit({
      type: "screen.proxy.http_failed",
      at: clock(),
      connectionId: exchange.connectionId,
      policy: null,
      status,
      reason,
    });
    const headers: Record<string, string> = {
      "Cache-Control": "no-store, no-transform",
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
    };
    if (status === 405) headers.Allow = "GET, HEAD";
    if (status === 426) headers.Upgrade = "websocket";
    send(exchange, status, headers, `${status}\n`);
  }

  private viewer(): Page {
    const { publicPath, frameAncestors } = this.parts;
    this.pages.viewer ??= viewerPage({
      publicPath,
      rfbModule: `${publicPath}/novnc/${this.novncFiles().version}/core/rfb.js`,
      frameAncestors,
    });
    return this.pages.viewer;
  }

  private terminal(): Page {
    const { publicPath, frameAncestors } = this.parts;
    this.pages.terminal ??= terminalPage({ publicPath, files: this.xtermFiles().names, frameAncestors });
    return this.pages.terminal;
  }

  private xtermFiles(): XtermFiles {
    this.xterm ??= new XtermFiles();
    return this.xterm;
  }

  private novncFiles(): NovncFiles {
    this.novnc ??= new NovncFiles();
    return this.novnc;
  }
}

/** Answers with a status, headers and a body (none for HEAD). */
function send(exchange: Exchange, status: number, headers: OutgoingHttpHeaders, body: string | Buffer): void {
  exchange.response.writeHead(status, headers);
  exchange.response.end(exchange.request.method === "HEAD" ? undefined : body);
}
