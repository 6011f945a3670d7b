/**
 * What the terminal page reports to `window.parent` with
 * `postMessage({ type: "agent-computer-terminal", state }, "*")`:
 * `connecting` (xterm ready, websocket opening), `connected` (a shell is
 * attached), then `disconnected` (a session that had connected ended:
 * revoked, control released, the shell exited, the gateway gone) or
 * `failed` (never connected: a refused or missing capability, xterm not
 * loaded, or 15 s without getting to `connected`). A connection that
 * drops (close 1006, or 1011-1014 from the gateway's side) reconnects by
 * itself to a new shell, up to five times with a growing pause, reporting
 * `connecting` again meanwhile; a shell that exited, a revoked or
 * released control and an ended desktop do not. A Reconnect button shows
 * on `failed` and `disconnected`; reconnecting starts a new shell.
 */
export type TerminalPageState = "connecting" | "connected" | "failed" | "disconnected";
