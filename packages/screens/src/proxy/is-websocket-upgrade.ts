import type { IncomingMessage } from "node:http";

/** Whether a request is a well-formed websocket upgrade (method, Upgrade header, key and version). */
export function isWebSocketUpgrade(request: IncomingMessage): boolean {
  const key = request.headers["sec-websocket-key"];
  const version = request.headers["sec-websocket-version"];
  return (
    request.method === "GET" &&
    request.headers.upgrade?.toLowerCase() === "websocket" &&
    typeof key === "string" &&
    /^[+/0-9A-Za-z]{22}==$/.test(key) &&
    (version === "13" || version === "8")
  );
}
