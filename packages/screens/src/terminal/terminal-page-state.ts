/**
 * What the terminal page reports to `window.parent` with
 * `postMessage({ type: "agent-computer-terminal", state }, "*")`:
 * `connecting` (xterm ready, websocket opening), `connected` (a shell is
 * attached), then `disconnected` (a session that had connected ended:
 * revoked, control released, the shell exited, the gateway gone) or
 * `failed` (never connected: a refused or missing capability, xterm not
 * loaded, or 15 s without getting to `connected`). A Reconnect button
 * shows on `failed` and `disconnected`; reconnecting starts a new shell.
 */
export type TerminalPageState = "connecting" | "connected" | "failed" | "disconnected";
