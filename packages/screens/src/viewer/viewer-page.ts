import { RELOAD_ON_CUT_LOAD } from "../http/reload-on-cut-load.js";
import { inlineScriptJson, pageSecurityPolicy } from "./page-security-policy.js";

/** How long the viewer waits to get to `connected` before it reports `failed`. */
export const VIEWER_FAIL_AFTER_MS = 15_000;

/** The `type` of the viewer's state messages to `window.parent`: `{ type, state }`. */
export const SCREEN_VIEWER_MESSAGE = "agent-computer-screen";

/** The `type` of a message the embedding app may post into the viewer to retry: `{ type }`. */
export const SCREEN_VIEWER_RETRY_MESSAGE = "agent-computer-screen-retry";

/**
 * The viewer page: one HTML document whose only script is inline and
 * pinned by its hash in the Content-Security-Policy. It reads the sealed
 * capability from the fragment (`#c=<sealed>&mode=view|control`), so the
 * capability never reaches a server log or a Referer, loads noVNC from
 * `rfbModule`, and connects to `<publicPath>/c/<sealed>` on its own origin.
 */
export function viewerPage(options: { publicPath: string; rfbModule: string; frameAncestors: string }): {
  html: string;
  contentSecurityPolicy: string;
} {
  const config = inlineScriptJson({
    publicPath: options.publicPath,
    rfbModule: options.rfbModule,
    failAfterMs: VIEWER_FAIL_AFTER_MS,
  });
  const script = VIEWER_SCRIPT.replace("__CONFIG__", config)
    .replace("__MESSAGE__", JSON.stringify(SCREEN_VIEWER_MESSAGE))
    .replace("__RETRY_MESSAGE__", JSON.stringify(SCREEN_VIEWER_RETRY_MESSAGE));
  return {
    html: `<!doctype html>
<html lang="en" data-state="loading">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Screen</title>
<style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
#screen { position: fixed; inset: 0; }
#status { position: fixed; inset: 0; display: flex; flex-direction: column; align-items: center; justify-content: center; gap: 12px; pointer-events: none; }
#status[hidden] { display: none; }
#retry { pointer-events: auto; font: inherit; padding: 6px 16px; border-radius: 6px; border: 1px solid #666; background: #222; color: #eee; cursor: pointer; }
#retry[hidden] { display: none; }
</style>
</head>
<body>
<div id="screen"></div>
<div id="status" role="status"><span id="message">Loading…</span><button id="retry" type="button" hidden>Retry</button></div>
<script type="module">${script}</script>
</body>
</html>
`,
    contentSecurityPolicy: pageSecurityPolicy({
      script,
      frameAncestors: options.frameAncestors,
      imgSrc: "'self' data: blob:",
      styleSrc: "'unsafe-inline'",
    }),
  };
}

// Plain browser JavaScript (no build step); __CONFIG__ becomes a JSON object.
const VIEWER_SCRIPT = `
// noVNC 1.7 probes H.264 decoding through WebCodecs while its modules load
// (a top-level await); in some browsers that probe never settles and the
// page would hang on "loading". Without VideoDecoder, noVNC skips the probe.
delete window.VideoDecoder;

const config = __CONFIG__;
const screen = document.getElementById("screen");
const status = document.getElementById("status");
const message = document.getElementById("message");
const retry = document.getElementById("retry");
const TEXT = {
  loading: "Loading…",
  connecting: "Connecting…",
  connected: "",
  failed: "This screen could not be shown.",
  disconnected: "The screen was disconnected.",
};
const params = new URLSearchParams(location.hash.slice(1));
const sealed = params.get("c") || "";
const mode = params.get("mode") === "control" ? "control" : "view";
let state = "";
let rfb = null;
let RFB = null;
let watchdog = 0;

function report(next) {
  if (next === state) return;
  state = next;
  document.documentElement.dataset.state = next;
  message.textContent = TEXT[next];
  status.hidden = next === "connected";
  retry.hidden = next !== "failed" && next !== "disconnected";
  try {
    window.parent.postMessage({ type: __MESSAGE__, state: next }, "*");
  } catch {}
}

function stop() {
  clearTimeout(watchdog);
  const current = rfb;
  rfb = null;
  if (current) {
    try {
      current.disconnect();
    } catch {}
  }
}

function fail() {
  stop();
  report("failed");
}

${RELOAD_ON_CUT_LOAD}
// Per frame: its mode and the end of its capability.
const reloadKey = "agent-computer-viewer-reloads:" + mode + ":" + sealed.slice(-8);

async function start() {
  stop();
  state = "";
  report("loading");
  watchdog = setTimeout(() => {
    if (state === "loading" || state === "connecting") fail();
  }, config.failAfterMs);
  if (!/^[A-Za-z0-9_-]+$/.test(sealed)) return fail();
  try {
    RFB = RFB || (await import(config.rfbModule)).default;
    loadedOnce(reloadKey);
  } catch {
    clearTimeout(watchdog);
    if (reloadToLoad(reloadKey)) return;
    return fail();
  }
  if (state !== "loading") return;
  report("connecting");
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  let current;
  try {
    current = new RFB(screen, scheme + location.host + config.publicPath + "/c/" + sealed, { shared: true });
  } catch {
    return fail();
  }
  rfb = current;
  current.viewOnly = mode === "view";
  current.scaleViewport = true;
  current.resizeSession = false;
  current.focusOnClick = mode === "control";
  current.background = "#111";
  current.addEventListener("connect", () => {
    if (rfb !== current) return;
    clearTimeout(watchdog);
    report("connected");
  });
  current.addEventListener("disconnect", (event) => {
    if (rfb !== current) return;
    rfb = null;
    clearTimeout(watchdog);
    report(state === "connected" && event.detail.clean ? "disconnected" : "failed");
  });
  // The gateway never asks for a VNC password: a prompt means a wrong target.
  current.addEventListener("credentialsrequired", () => {
    if (rfb === current) fail();
  });
}

retry.addEventListener("click", () => start());
// The embedding app may ask for a retry: postMessage({ type: "agent-computer-screen-retry" }).
window.addEventListener("message", (event) => {
  if (event.source === window.parent && event.data && event.data.type === __RETRY_MESSAGE__) start();
});
start();
`;
