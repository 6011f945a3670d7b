import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type PortTarget, proxyHttp, proxyUpgrade, refuseUpgrade } from "@agent-computer/testing/emulator";

// Daytona's preview proxy (apps/proxy at daytonaio/daytona v0.190.0) as far
// as a signed preview URL meets it: the sandbox and port from the Host
// header, the token checked for that port, a browser's warning page, and
// what a request without a valid token gets.

/** apps/proxy/pkg/proxy/warning_page.go:19-22. */
export const SKIP_PREVIEW_WARNING_HEADER = "X-Daytona-Skip-Preview-Warning";
export const PREVIEW_WARNING_COOKIE = "daytona-preview-page-accepted";
const ACCEPT_WARNING_PATH = "/accept-daytona-preview-warning";
/** apps/proxy/pkg/proxy/proxy.go:50-52: ports the warning page never covers (terminal, toolbox, recordings). */
const PORTS_WITHOUT_WARNING = new Set([22222, 2280, 33333]);
/** apps/proxy/pkg/proxy/proxy.go:40,46: the cookie a valid token leaves, per token. */
const AUTH_COOKIE_PREFIX = "daytona-sandbox-auth-";
const AUTH_COOKIE_MAX_AGE = 3600;

/** A signed token's grant, as the API keeps it (sandbox.service.ts getSignedPortPreviewUrl: `port:token` to the sandbox, with a TTL). */
export interface PreviewGrant {
  sandboxId: string;
  port: number;
  expiresAt: number;
}

/** What the proxy asks of the emulator. */
export interface PreviewBackend {
  grant(port: number, token: string): PreviewGrant | undefined;
  /** A sandbox's public flag by id (the proxy's IsSandboxPublic; a token is no id, so false). */
  isPublic(sandboxIdOrToken: string): boolean;
  /** The running sandbox's address, or why there is none (502). */
  address(sandboxId: string): string | undefined;
  /** Streams the emulator ends when it closes. */
  open: Set<Socket>;
}

/**
 * Splits a preview host, `<port>-<sandbox id or token>.<proxy domain>`, as
 * parseHost does (get_sandbox_target.go parseHost: the first label cut at
 * its first "-", the port numeric, at least one more label).
 */
export function parsePreviewHost(host: string): { port: number; idOrToken: string; baseHost: string } | undefined {
  const labels = host.split(":")[0]?.split(".") ?? [];
  if (labels.length < 2) return undefined;
  const first = labels[0] as string;
  const dash = first.indexOf("-");
  if (dash < 0) return undefined;
  const port = first.slice(0, dash);
  if (!/^\d+$/.test(port)) return undefined;
  return { port: Number(port), idOrToken: first.slice(dash + 1), baseHost: labels.slice(1).join(".") };
}

/**
 * A browser, as the proxy's isBrowser decides from the User-Agent
 * (warning_page.go isBrowser: mssola/useragent's browser name is one of
 * chrome, firefox, safari, edge, brave, vivaldi, samsung, opera). Written
 * as the product tokens those browsers send; headless Chrome and Node's
 * fetch are not browsers to it.
 */
export function isBrowserAgent(userAgent: string | undefined): boolean {
  if (!userAgent || /HeadlessChrome/i.test(userAgent)) return false;
  return /\b(Firefox|Chrome|CriOS|Safari|Edg|EdgA|Edge|OPR|Opera|Vivaldi|SamsungBrowser|Brave)\//.test(userAgent);
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return value.join("=");
  }
  return undefined;
}

/** Whether the warning page answers this request (warning_page.go browserWarningMiddleware). */
function wantsWarning(req: IncomingMessage, path: string, port: number | undefined): boolean {
  if (req.headers[SKIP_PREVIEW_WARNING_HEADER.toLowerCase()] === "true") return false;
  if (!isBrowserAgent(req.headers["user-agent"])) return false;
  const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
  if (upgrade === "websocket" && String(req.headers.connection ?? "").toLowerCase() === "upgrade") return false;
  if (cookieOf(req, PREVIEW_WARNING_COOKIE) === "true") return false;
  if (port === undefined && req.method === "GET" && (path === "/callback" || path === "/health")) return false;
  return !(path === ACCEPT_WARNING_PATH || (port !== undefined && PORTS_WITHOUT_WARNING.has(port)));
}

/** The emulator's own page in the warning's place: status, headers and form as serveWarningPage sends them (warning_page.go:130-336). */
function sendWarning(req: IncomingMessage, res: ServerResponse, https: boolean): void {
  const original = `${https ? "https://" : "http://"}${req.headers.host ?? ""}${req.url ?? "/"}`;
  const action = `${ACCEPT_WARNING_PATH}?redirect=${encodeURIComponent(original)}`;
  const escaped = original.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  res.writeHead(200, {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "content-type": "text/html; charset=utf-8",
  });
  res.end(
    `<!doctype html><html><head><title>Preview warning (emulated)</title></head><body>` +
      `<p>You are about to open ${escaped}, a sandbox's preview.</p>` +
      `<form action="${action}" method="POST"><button type="submit">Continue</button></form></body></html>`,
  );
}

/** The accept form's answer (warning_page.go handleAcceptProxyWarning): the cookie, then a same-host redirect. */
function acceptWarning(req: IncomingMessage, res: ServerResponse, https: boolean): void {
  const host = req.headers.host ?? "";
  const wanted = new URL(req.url ?? "/", "http://x").searchParams.get("redirect") ?? "";
  let location = "/";
  try {
    const normalized = wanted.replace(/\\/g, "/");
    const target = new URL(normalized, "http://relative.invalid");
    const sameHost = target.host.toLowerCase() === host.toLowerCase() && /^https?:$/.test(target.protocol);
    const relative = normalized.startsWith("/") && !normalized.startsWith("//");
    if (wanted && (sameHost || relative)) location = wanted;
  } catch {}
  const cookie = [
    `${PREVIEW_WARNING_COOKIE}=true`,
    "Path=/",
    `Domain=${host.split(":")[0]}`,
    "Max-Age=86400",
    "HttpOnly",
    ...(https ? ["Secure", "SameSite=None"] : ["SameSite=Lax"]),
  ].join("; ");
  res.writeHead(302, { location, "set-cookie": cookie }).end();
}

/**
 * Serves preview URLs in host form. Protocol: the URLs say `https` (the
 * API's proxy.protocol); the emulator listens on plain loopback HTTP and
 * the tunnel (preview-tunnel.ts) carries the host.
 */
export class PreviewProxy {
  constructor(
    private readonly backend: PreviewBackend,
    private readonly https = true,
  ) {}

  http(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    // proxy.go StartProxy: the accept form is answered before anything else.
    if (req.method === "POST" && path === ACCEPT_WARNING_PATH) {
      acceptWarning(req, res, this.https);
      return;
    }
    const parsed = parsePreviewHost(req.headers.host ?? "");
    if (wantsWarning(req, path, parsed?.port)) {
      sendWarning(req, res, this.https);
      return;
    }
    const target = this.target(req, parsed);
    if ("status" in target) {
      res.writeHead(target.status, { "content-type": "application/json", ...target.headers });
      res.end(JSON.stringify({ statusCode: target.status, message: target.message }));
      return;
    }
    if (target.cookie) res.setHeader("set-cookie", target.cookie);
    proxyHttp(req, res, target);
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const target = this.target(req, parsePreviewHost(req.headers.host ?? ""));
    if ("status" in target) refuseUpgrade(socket, target.status, target.message);
    else proxyUpgrade(req, socket, head, target, this.backend.open);
  }

  /**
   * The sandbox port a request reaches, or the proxy's answer instead
   * (get_sandbox_target.go GetProxyTarget, auth.go Authenticate): a host
   * that does not parse is 404 (proxy.go: not proxied); a private sandbox
   * needs the token signed for this port, and without one the proxy
   * redirects (307) to its OIDC login (auth.go:87-93); a public one passes.
   */
  private target(
    req: IncomingMessage,
    parsed: ReturnType<typeof parsePreviewHost>,
  ): (PortTarget & { cookie?: string }) | { status: number; message: string; headers?: Record<string, string> } {
    if (!parsed) return { status: 404, message: "not found" };
    let sandboxId = parsed.idOrToken;
    let cookie: string | undefined;
    if (!this.backend.isPublic(parsed.idOrToken)) {
      const grant = this.backend.grant(parsed.port, parsed.idOrToken);
      if (!grant || grant.expiresAt < Date.now()) {
        return { status: 307, message: "Temporary Redirect", headers: { location: this.loginUrl(parsed.baseHost) } };
      }
      sandboxId = grant.sandboxId;
      cookie = `${AUTH_COOKIE_PREFIX}${parsed.idOrToken}=${randomBytes(12).toString("hex")}; Path=/; Max-Age=${AUTH_COOKIE_MAX_AGE}; HttpOnly${this.https ? "; Secure" : ""}`;
    }
    const address = this.backend.address(sandboxId);
    if (!address) return { status: 502, message: "sandbox is not running" };
    return { host: address, port: parsed.port, path: req.url ?? "/", cookie };
  }

  /** Where auth.go sends a request without valid auth: the OIDC authorize URL, back to `<base host>/callback` (auth_callback.go getAuthUrl). */
  private loginUrl(baseHost: string): string {
    const back = `${this.https ? "https" : "http"}://${baseHost}/callback`;
    const state = randomBytes(12).toString("base64url");
    return `https://auth.${baseHost}/authorize?client_id=daytona-proxy&redirect_uri=${encodeURIComponent(back)}&response_type=code&scope=openid+profile&state=${state}`;
  }
}
