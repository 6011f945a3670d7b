import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

/** Headers that describe one hop (RFC 9110 §7.6.1), and a proxy's own: a proxy never passes them on. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * The headers a proxy forwards: all but the hop-by-hop ones and those the
 * request's `Connection` header names. Shared by the egress proxy
 * (packages/egress) and the display browser's proxy relay
 * (packages/desktop-runtime/computer/desktop/proxy-relay.ts).
 */
export function endToEndHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = String(headers.connection ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase());
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.includes(name)) continue;
    out[name] = value;
  }
  return out;
}
