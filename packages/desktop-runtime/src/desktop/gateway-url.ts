/**
 * A websocket URL on the screen gateway from the machine's `portUrl`: the
 * path goes after any path the URL already has, and its query string is
 * kept, since some providers' port routes carry their own token there
 * (signed preview URLs, `?_token=` private routes).
 */
export function gatewayUrl(portUrl: string, path: string): string {
  const url = new URL(portUrl);
  url.protocol = url.protocol === "https:" || url.protocol === "wss:" ? "wss:" : "ws:";
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`;
  return url.toString();
}
