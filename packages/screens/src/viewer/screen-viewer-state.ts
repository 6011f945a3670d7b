/**
 * What the viewer page reports to `window.parent` with
 * `postMessage({ type: "agent-computer-screen", state }, "*")`, in this
 * order: `loading` (noVNC modules loading), `connecting` (websocket and RFB
 * handshake), `connected` (frames arrive), then `disconnected` (the server
 * ended a session that had connected: revoked, control ended, gateway gone)
 * or `failed` (never connected, a protocol error, or 15 s without getting
 * to `connected`). A Retry button shows on `failed` and `disconnected`.
 */
export type ScreenViewerState = "loading" | "connecting" | "connected" | "failed" | "disconnected";
