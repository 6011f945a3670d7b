import { inlineScriptJson, pageSecurityPolicy } from "../viewer/page-security-policy.js";

/** The `type` of the Files page's messages to `window.parent`: `{ type, state, path }`. */
export const FILES_PAGE_MESSAGE = "agent-computer-files";

/**
 * The Files page: one HTML document, no build step and nothing from the
 * network, whose only script is inline and pinned by its hash in the CSP.
 * It reads the sealed capability from the fragment (`#c=<token>&mode=...`)
 * and sends it as a bearer header, so it never reaches a URL a server logs.
 * While visible it refreshes the open folder every `refreshMs` and whenever
 * the server's event stream says a bot ran a command.
 */
export function filesPage(options: { publicPath: string; refreshMs: number; frameAncestors: string }): {
  html: string;
  contentSecurityPolicy: string;
} {
  const config = inlineScriptJson({
    publicPath: options.publicPath,
    refreshMs: options.refreshMs,
    message: FILES_PAGE_MESSAGE,
  });
  const script = FILES_SCRIPT.replace("__CONFIG__", config);
  return {
    html: `<!doctype html>
<html lang="en" data-state="loading">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Files</title>
<style>
body { margin: 0; font: 14px system-ui, sans-serif; background: #fafafa; color: #222; }
header { display: flex; gap: 12px; align-items: center; padding: 8px 12px; border-bottom: 1px solid #ddd; background: #fff; }
#where { font-family: ui-monospace, monospace; flex: 1; }
#source { color: #777; }
main { display: grid; grid-template-columns: minmax(200px, 1fr) 2fr; min-height: 300px; }
#entries { list-style: none; margin: 0; padding: 4px 0; border-right: 1px solid #ddd; overflow: auto; }
#entries li { display: flex; justify-content: space-between; padding: 2px 12px; }
#entries button { border: 0; background: none; padding: 0; font: inherit; cursor: pointer; text-align: left; color: #0645ad; }
#entries .size { color: #777; }
#preview { padding: 8px 12px; overflow: auto; }
#preview-text { white-space: pre-wrap; font: 12px ui-monospace, monospace; }
#status { padding: 4px 12px; min-height: 1.4em; color: #555; }
#status.error { color: #b00020; }
[hidden] { display: none !important; }
</style>
</head>
<body>
<header><span id="where">…</span><span id="source"></span>
<label id="upload-label" hidden>Upload <input id="upload" type="file"></label></header>
<div id="status" role="status">Loading…</div>
<main><ul id="entries"></ul>
<section id="preview" hidden><strong id="preview-name"></strong> <button id="download" type="button">Download</button>
<p id="preview-note"></p><pre id="preview-text"></pre></section></main>
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

const FILES_SCRIPT = `
const config = __CONFIG__;
const fragment = new URLSearchParams(location.hash.slice(1));
const token = fragment.get("c") || "";
const $ = (id) => document.getElementById(id);
const api = (op, query) => config.publicPath + "/api/" + op + "?" + new URLSearchParams(query || {});
let dir = null;
let opened = null;
// Set once the capability is revoked or expired: it never comes back, so the page stops asking.
let closed = false;

async function call(op, query, init) {
  const response = await fetch(api(op, query), { ...init, headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  if (!response.ok) {
    const body = await response.json().catch(() => ({ code: String(response.status), message: response.statusText }));
    if (response.status === 401) close();
    throw body;
  }
  return response;
}
function say(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}
function report(state) {
  document.documentElement.dataset.state = state;
  window.parent.postMessage({ type: config.message, state, path: dir }, "*");
}
const sizeOf = (n) => (n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB");
const parentOf = (p) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "");

function row(entry, label) {
  const li = document.createElement("li");
  li.dataset.path = entry.path;
  li.dataset.kind = entry.kind;
  const open = document.createElement("button");
  open.type = "button";
  open.textContent = label || (entry.kind === "directory" ? entry.name + "/" : entry.kind === "symlink" ? entry.name + " →" : entry.name);
  if (entry.kind === "directory") open.onclick = () => show(entry.path);
  else if (entry.kind === "file") open.onclick = () => preview(entry.path);
  else open.disabled = true;
  const size = document.createElement("span");
  size.className = "size";
  size.textContent = entry.kind === "file" ? sizeOf(entry.size) : entry.kind === "symlink" ? "link" : "";
  li.append(open, size);
  return li;
}

async function show(path) {
  try {
    const listing = await (await call("list", { path })).json();
    dir = listing.path;
    $("where").textContent = "/" + dir;
    $("source").textContent = listing.source === "store" ? "stopped: from the last save" : "live";
    const rows = dir === "" ? [] : [row({ path: parentOf(dir), kind: "directory", name: ".." }, "../")];
    for (const entry of listing.entries) rows.push(row(entry));
    $("entries").replaceChildren(...rows);
    if (/^(Loading…|\\d+ entries)$/.test($("status").textContent)) say(listing.entries.length + " entries");
    report("ready");
  } catch (error) {
    if (closed) return;
    say((error.code || "ERROR") + ": " + (error.message || String(error)), true);
    report("failed");
  }
}
const refresh = () => (dir === null || closed ? undefined : show(dir));
function close() {
  closed = true;
  say("This Files window has closed (control handed back, or its time ran out); open it again from the console.", true);
  report("closed");
}

async function preview(path) {
  opened = path;
  $("preview").hidden = false;
  $("preview-name").textContent = path.split("/").pop();
  $("preview-text").textContent = "";
  $("preview-note").textContent = "";
  try {
    const p = await (await call("preview", { path })).json();
    if (p.binary) $("preview-note").textContent = "Binary file" + (p.size === null ? "" : ", " + sizeOf(p.size)) + ": download it to open.";
    else {
      $("preview-text").textContent = p.text;
      if (p.truncated) $("preview-note").textContent = "Showing the start only.";
    }
  } catch (error) {
    $("preview-note").textContent = (error.code || "ERROR") + ": " + (error.message || String(error));
  }
}

$("download").onclick = async () => {
  if (!opened) return;
  try {
    const blob = await (await call("download", { path: opened })).blob();
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = opened.split("/").pop();
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    say("Downloaded " + link.download + " (" + sizeOf(blob.size) + ")");
  } catch (error) {
    say((error.code || "ERROR") + ": " + (error.message || String(error)), true);
  }
};

$("upload").onchange = async () => {
  const file = $("upload").files[0];
  if (!file) return;
  const path = (dir === "" ? "" : dir + "/") + file.name;
  say("Uploading " + file.name + "…");
  try {
    const saved = await (await call("upload", { path }, { method: "PUT", body: file })).json();
    say("Uploaded " + saved.path + " (" + sizeOf(saved.size) + ")");
  } catch (error) {
    say((error.code || "ERROR") + ": " + (error.message || String(error)), true);
  }
  $("upload").value = "";
  refresh();
};

async function follow() {
  // The server's word that a bot ran a command: refresh now, not at the next tick.
  while (!closed) {
    try {
      const response = await call("events");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value.includes("data: closed")) close();
        else if (value.includes("data: refresh") && document.visibilityState === "visible") refresh();
      }
    } catch {}
    if (!closed) await new Promise((r) => setTimeout(r, 2000));
  }
}

try {
  const home = await (await call("home")).json();
  $("upload-label").hidden = home.mode !== "control";
  await show(home.folder);
  setInterval(() => document.visibilityState === "visible" && refresh(), config.refreshMs);
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && refresh());
  follow();
} catch (error) {
  say((error.code || "ERROR") + ": " + (error.message || String(error)), true);
  report("failed");
}
`;
