import { RELOAD_ON_CUT_LOAD } from "../http/reload-on-cut-load.js";
import { inlineScriptJson, pageSecurityPolicy } from "../viewer/page-security-policy.js";

/** How long the terminal page waits to get to `connected` before it reports `failed`. */
export const TERMINAL_FAIL_AFTER_MS = 15_000;

/** The `type` of the terminal page's state messages to `window.parent`: `{ type, state }`. */
export const TERMINAL_PAGE_MESSAGE = "agent-computer-terminal";

/** The `type` of a message the embedding app may post into the terminal page to reconnect: `{ type }`. */
export const TERMINAL_PAGE_RETRY_MESSAGE = "agent-computer-terminal-retry";

/**
 * The terminal page: xterm.js (UMD script, fit addon, stylesheet from
 * `<publicPath>/xterm/`) and one inline script pinned by its hash in the
 * Content-Security-Policy. It reads the sealed capability from the fragment
 * (`#c=<sealed>`), so the capability never reaches a server log or a
 * Referer, and connects to `<publicPath>/t/<sealed>` on its own origin.
 */
export function terminalPage(options: {
  publicPath: string;
  files: { script: string; stylesheet: string; fit: string };
  frameAncestors: string;
}): { html: string; contentSecurityPolicy: string } {
  const config = inlineScriptJson({ publicPath: options.publicPath, failAfterMs: TERMINAL_FAIL_AFTER_MS });
  const script = TERMINAL_SCRIPT.replace("__CONFIG__", config)
    .replace("__MESSAGE__", JSON.stringify(TERMINAL_PAGE_MESSAGE))
    .replace("__RETRY_MESSAGE__", JSON.stringify(TERMINAL_PAGE_RETRY_MESSAGE));
  const asset = (name: string) => `${options.publicPath}/xterm/${name}`;
  return {
    html: `<!doctype html>
<html lang="en" data-state="connecting">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Terminal</title>
<link rel="stylesheet" href="${asset(options.files.stylesheet)}">
<style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
#terminal { position: fixed; inset: 4px; }
#status { position: fixed; left: 0; right: 0; bottom: 0; display: flex; align-items: center; justify-content: center; gap: 12px; padding: 8px; background: rgba(34, 34, 34, 0.92); border-top: 1px solid #444; }
#status[hidden] { display: none; }
#retry { font: inherit; padding: 4px 14px; border-radius: 6px; border: 1px solid #666; background: #333; color: #eee; cursor: pointer; }
#retry[hidden] { display: none; }
</style>
<script src="${asset(options.files.script)}"></script>
<script src="${asset(options.files.fit)}"></script>
</head>
<body>
<div id="terminal"></div>
<div id="status" role="status"><span id="message">Connecting…</span><button id="retry" type="button" hidden>Reconnect</button></div>
<script>${script}</script>
</body>
</html>
`,
    contentSecurityPolicy: pageSecurityPolicy({
      script,
      frameAncestors: options.frameAncestors,
      // xterm.css from 'self'; xterm's DOM renderer adds <style> elements.
      styleSrc: "'self' 'unsafe-inline'",
    }),
  };
}

// Plain browser JavaScript (no build step), run after xterm's UMD scripts
// defined window.Terminal and window.FitAddon; __CONFIG__ becomes a JSON object.
const TERMINAL_SCRIPT = `
(() => {
  const config = __CONFIG__;
  const root = document.getElementById("terminal");
  const status = document.getElementById("status");
  const message = document.getElementById("message");
  const retry = document.getElementById("retry");
  const TEXT = {
    connecting: "Connecting…",
    connected: "",
    failed: "This terminal could not be opened.",
    disconnected: "The terminal was disconnected.",
  };
  const sealed = new URLSearchParams(location.hash.slice(1)).get("c") || "";
  ${RELOAD_ON_CUT_LOAD}
  const reloadKey = "agent-computer-terminal-reloads:" + sealed.slice(-8);
  const encoder = new TextEncoder();
  let state = "";
  let socket = null;
  let watchdog = 0;
  let term = null;
  let fit = null;
  // A connection that drops (no close frame, 1006; the gateway or its link
  // failing, 1011-1014) is made again, a new shell, a few times with a
  // growing pause; a shell that exited (1000), a revoked or released
  // control (1008) or an ended desktop (1001) is not.
  const TRANSIENT = [1006, 1011, 1012, 1013, 1014];
  const RECONNECT_DELAYS_MS = [250, 1000, 2000, 4000, 8000];
  let reconnects = -1;
  let pending = 0;

  function report(next, text) {
    if (next === state) return;
    state = next;
    document.documentElement.dataset.state = next;
    message.textContent = text || TEXT[next];
    status.hidden = next === "connected";
    retry.hidden = next !== "failed" && next !== "disconnected";
    try {
      window.parent.postMessage({ type: __MESSAGE__, state: next }, "*");
    } catch {}
  }

  // Binary frames carry terminal bytes; a text frame is JSON control.
  function send(data) {
    if (socket && socket.readyState === 1) socket.send(data);
  }

  function sendSize() {
    if (term) send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  }

  function refit() {
    if (!fit) return;
    try {
      fit.fit();
    } catch {}
  }

  function setup() {
    if (term) return true;
    const Terminal = window.Terminal;
    const FitAddon = window.FitAddon && window.FitAddon.FitAddon;
    if (typeof Terminal !== "function" || typeof FitAddon !== "function") return false;
    term = new Terminal({
      cursorBlink: true,
      scrollback: 5000,
      fontSize: 14,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
      theme: { background: "#111111" },
    });
    fit = new FitAddon();
    term.loadAddon(fit);
    term.open(root);
    // Keystrokes and pastes, as UTF-8.
    term.onData((data) => send(encoder.encode(data)));
    // Mouse reports in the legacy encoding: one byte per character.
    term.onBinary((data) => {
      const bytes = new Uint8Array(data.length);
      for (let i = 0; i < data.length; i++) bytes[i] = data.charCodeAt(i) & 255;
      send(bytes);
    });
    term.onResize(() => sendSize());
    window.addEventListener("resize", refit);
    if (typeof ResizeObserver === "function") new ResizeObserver(refit).observe(root);
    refit();
    return true;
  }

  function stop() {
    clearTimeout(watchdog);
    clearTimeout(pending);
    const current = socket;
    socket = null;
    if (current) {
      try {
        current.close();
      } catch {}
    }
  }

  function fail() {
    stop();
    report("failed");
  }

  function start() {
    reconnects = -1;
    connect(false);
  }

  // After a drop: the next attempt, or "disconnected" when they are spent.
  function reconnectLater() {
    if (reconnects + 1 >= RECONNECT_DELAYS_MS.length) return report("disconnected");
    reconnects++;
    report("connecting", "Connection lost; reconnecting…");
    pending = setTimeout(() => connect(true), RECONNECT_DELAYS_MS[reconnects]);
  }

  function connect(again) {
    stop();
    if (!again) {
      state = "";
      report("connecting");
    }
    if (!/^[A-Za-z0-9_-]+$/.test(sealed)) return fail();
    if (!setup()) {
      // xterm's scripts did not load (a request the browser cut): a fresh document fetches them again.
      if (reloadToLoad(reloadKey)) return;
      return fail();
    }
    loadedOnce(reloadKey);
    if (!again) term.reset();
    watchdog = setTimeout(() => {
      if (state !== "connecting") return;
      if (!again) return fail();
      stop();
      reconnectLater();
    }, config.failAfterMs);
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    let current;
    try {
      current = new WebSocket(scheme + location.host + config.publicPath + "/t/" + sealed);
    } catch {
      return fail();
    }
    current.binaryType = "arraybuffer";
    socket = current;
    current.onopen = () => {
      if (socket !== current) return;
      clearTimeout(watchdog);
      if (again) term.write("\\r\\n[reconnected: a new shell]\\r\\n");
      reconnects = -1;
      report("connected");
      refit();
      sendSize();
      term.focus();
    };
    current.onmessage = (event) => {
      // Text frames from the gateway are reserved for control.
      if (socket === current && typeof event.data !== "string") term.write(new Uint8Array(event.data));
    };
    current.onclose = (event) => {
      if (socket !== current) return;
      socket = null;
      clearTimeout(watchdog);
      const hadShell = state === "connected" || again;
      if (hadShell && event && TRANSIENT.includes(event.code)) return reconnectLater();
      report(hadShell ? "disconnected" : "failed");
    };
  }

  // For test drivers: the visible lines (or with { all: true } the whole
  // buffer, scrollback included, trailing empty lines dropped), joined by "\\n".
  window.terminalText = (options) => {
    if (!term) return "";
    const buffer = term.buffer.active;
    const all = Boolean(options && options.all);
    const from = all ? 0 : buffer.viewportY;
    const to = all ? buffer.length : Math.min(buffer.length, buffer.viewportY + term.rows);
    const lines = [];
    for (let i = from; i < to; i++) {
      const line = buffer.getLine(i);
      lines.push(line ? line.translateToString(true) : "");
    }
    if (all) while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return lines.join("\\n");
  };

  retry.addEventListener("click", () => start());
  // The embedding app may ask for a new connection (a new shell):
  // postMessage({ type: "agent-computer-terminal-retry" }).
  window.addEventListener("message", (event) => {
    if (event.source === window.parent && event.data && event.data.type === __RETRY_MESSAGE__) start();
  });
  start();
})();
`;
