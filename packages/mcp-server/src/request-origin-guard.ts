import { isIP } from "node:net";
import { AgentComputerError } from "@agent-computer/core";

/** Where requests may come from: `Host` names and browser `Origin`s. */
export interface RequestOriginRules {
  /** Host names (no port) a request's `Host` header may name; `[::1]` for IPv6. */
  readonly allowedHosts: readonly string[];
  /** Origins (`scheme://host[:port]`) a browser's `Origin` header may name. */
  readonly allowedOrigins: readonly string[];
}

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/**
 * The rules when none are given: the address the server bound, and, for a
 * loopback one, the loopback names a local client may use instead (the
 * `localhost` a person types). A server bound to every address (0.0.0.0,
 * `::`) or a LAN one admits only that address until told its names.
 */
export function defaultOriginRules(boundHost: string, port: number): RequestOriginRules {
  const host = isIP(boundHost) === 6 ? `[${boundHost}]` : boundHost.toLowerCase();
  const loopback = LOOPBACK_NAMES.includes(host) || /^127\./.test(host);
  const allowedHosts = loopback ? [...new Set([host, ...LOOPBACK_NAMES])] : [host];
  const allowedOrigins = allowedHosts.map((h) => originOf(`http://${h}:${port}`) ?? `http://${h}:${port}`);
  return { allowedHosts, allowedOrigins };
}

/**
 * The rules a caller gave, each in the one spelling requests are compared
 * in (`MCP.Example:8080` is the host `mcp.example`), checked at once; the
 * returned function completes them with the defaults for the address the
 * server then bound. A value that names no host or origin refuses to
 * start: silently, it would admit nothing.
 */
export function originRulesFrom(given: {
  allowedHosts?: readonly string[] | undefined;
  allowedOrigins?: readonly string[] | undefined;
}): (defaults: RequestOriginRules) => RequestOriginRules {
  const checked = (values: readonly string[], read: (v: string) => string | undefined, what: string) =>
    values.map((value) => {
      const canonical = read(value.trim());
      if (canonical === undefined)
        throw new AgentComputerError("INVALID_ARGUMENT", `${JSON.stringify(value)} is not ${what}.`);
      return canonical;
    });
  const hosts = given.allowedHosts && checked(given.allowedHosts, hostNameOf, "a host name (MCP_ALLOWED_HOSTS)");
  const origins =
    given.allowedOrigins &&
    checked(given.allowedOrigins, originOf, "an origin like https://app.example (MCP_ALLOWED_ORIGINS)");
  return (defaults) => ({
    allowedHosts: hosts ?? defaults.allowedHosts,
    allowedOrigins: origins ?? defaults.allowedOrigins,
  });
}

/**
 * Why a request may not be served, or undefined when it may: the MCP
 * specification's DNS rebinding protection for the streamable HTTP
 * transport. A web page whose name was rebound to this address reaches it
 * with its own name in `Host` and its own origin in `Origin`; both are
 * refused (403). A request without `Origin` comes from a client that is
 * not a browser and is judged on `Host` alone. Checked before the bearer
 * token (serve-mcp-http.ts), so a refused page learns nothing more.
 *
 * Written here rather than taken from @modelcontextprotocol/sdk: its
 * transport's `allowedHosts`/`allowedOrigins` are deprecated and run only
 * inside a session's transport, after this server has already answered a
 * request without a session (401, 404, 400), and its replacement,
 * `hostHeaderValidation`, is Express middleware this node:http server has
 * no place for.
 */
export function originRefusal(
  headers: { host?: string | undefined; origin?: string | undefined },
  rules: RequestOriginRules,
): string | undefined {
  const hostName = hostNameOf(headers.host);
  if (hostName === undefined || !rules.allowedHosts.includes(hostName)) {
    return `Host ${JSON.stringify(headers.host ?? "")} is not one this MCP server answers (${rules.allowedHosts.join(", ")}); set allowedHosts (MCP_ALLOWED_HOSTS) to the names clients use.`;
  }
  if (headers.origin === undefined) return undefined;
  const origin = originOf(headers.origin);
  if (origin === undefined || !rules.allowedOrigins.includes(origin)) {
    return `Origin ${JSON.stringify(headers.origin)} may not use this MCP server; set allowedOrigins (MCP_ALLOWED_ORIGINS) to admit a web page's origin.`;
  }
  return undefined;
}

/** The host name of a `Host` header, lower case, without its port; undefined when it is not one. */
function hostNameOf(header: string | undefined): string | undefined {
  // A header with a path, credentials or a query is no host.
  if (!header || /[/\\@?#\s]/.test(header)) return undefined;
  try {
    return new URL(`http://${header}`).hostname;
  } catch {
    return undefined;
  }
}

/** An origin in its one spelling (`http://localhost:80` is `http://localhost`); undefined for "null" or junk. */
function originOf(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === "null" ? undefined : origin;
  } catch {
    return undefined;
  }
}
