/**
 * The console page: plain HTML and one script, no framework and no build.
 * Screens, terminal and Files are the screens package's own pages in
 * iframes; this page only arranges them and calls the console's API.
 */
export function consolePage(computerId: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${computerId}</title>
<style>
body { margin: 0; font: 14px system-ui, sans-serif; background: #f4f4f6; color: #222; }
header, .rules { padding: 10px 16px; } header h1 { margin: 0; font-size: 18px; }
.rules { background: #fff8e1; border-bottom: 1px solid #eed; }
#bots { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px; padding: 12px 16px; }
.bot { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 8px; }
.bot iframe { width: 100%; height: 260px; border: 0; background: #111; }
.state { font-size: 12px; padding: 1px 8px; border-radius: 8px; background: #e0e0e0; }
.state.running { background: #c8e6c9; } .message { color: #b00020; min-height: 1.2em; }
#control { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; padding: 0 16px 12px; }
#control iframe { width: 100%; height: 340px; border: 1px solid #ccc; background: #fff; }
#control .screen { grid-column: 1 / -1; height: 420px; }
#feed { margin: 0 16px 16px; max-height: 220px; overflow: auto; background: #fff; border: 1px solid #ddd; font: 12px ui-monospace, monospace; }
#feed .failed { color: #b00020; }
[hidden] { display: none !important; }
</style></head>
<body>
<header><h1>Team computer ${computerId}</h1></header>
<p class="rules">Take control is refused while a bot runs: <strong>Stop the bot first</strong>, or wait until it asks
for a takeover. While you hold control the bot cannot act on its screen; Release hands it back.</p>
<section id="bots"></section>
<section id="control" hidden></section>
<h2 style="margin:0 16px">Activity</h2><ol id="feed"></ol>
<script type="module">
const post = async (op, bot) => {
  const r = await fetch("/api/" + op + "/" + bot, { method: "POST" });
  const body = await r.json();
  if (!r.ok) throw body;
  return body;
};
const card = (bot) => document.querySelector('.bot[data-bot="' + bot + '"]');

function control(bot, urls) {
  const panel = document.getElementById("control");
  panel.hidden = false;
  panel.dataset.bot = bot;
  panel.innerHTML = '<iframe class="screen" id="control-screen" title="control"></iframe>' +
    '<iframe id="terminal" title="terminal"></iframe><iframe id="files" title="files"></iframe>';
  panel.querySelector("#control-screen").src = urls.viewerUrl;
  panel.querySelector("#terminal").src = urls.terminalUrl;
  panel.querySelector("#files").src = urls.filesUrl;
}

async function act(op, bot) {
  const message = card(bot).querySelector(".message");
  message.textContent = "";
  try {
    const urls = await post(op, bot);
    if (op === "takeover") control(bot, urls);
    if (op === "release") document.getElementById("control").hidden = true;
  } catch (error) {
    message.textContent = error.code + ": " + error.message;
  }
  await poll();
}

for (const screen of await (await fetch("/api/screens")).json()) {
  const el = document.createElement("article");
  el.className = "bot";
  el.dataset.bot = screen.botId;
  el.innerHTML = '<h2>' + screen.botId + ' <span class="state"></span></h2><iframe title="screen"></iframe>' +
    '<button data-op="takeover">Take control</button> <button data-op="release">Release</button> ' +
    '<button data-op="stop">Stop bot</button><p class="message"></p>';
  el.querySelector("iframe").src = screen.viewerUrl;
  el.querySelector("iframe").id = "screen-" + screen.botId;
  for (const b of el.querySelectorAll("button")) b.onclick = () => act(b.dataset.op, screen.botId);
  document.getElementById("bots").append(el);
}

async function poll() {
  for (const bot of await (await fetch("/api/bots")).json()) {
    const state = card(bot.botId).querySelector(".state");
    state.textContent = bot.controlled ? "controlled by you" : bot.state;
    state.className = "state " + bot.state;
  }
}
await poll();
setInterval(poll, 2000);

// A watched screen that dropped (the bot's run ended and its desktop was
// replaced, the computer restarted) gets a fresh view capability, in a new
// frame: only the fragment would change, and that does not reload a page.
addEventListener("message", (e) => {
  if (e.data?.type !== "agent-computer-screen" || !["disconnected", "failed"].includes(e.data.state)) return;
  for (const frame of document.querySelectorAll(".bot iframe"))
    if (frame.contentWindow === e.source)
      setTimeout(async () => {
        const fresh = frame.cloneNode();
        fresh.src = (await (await fetch("/api/screen/" + frame.closest(".bot").dataset.bot)).json()).viewerUrl;
        frame.replaceWith(fresh);
      }, 1000);
});

const feed = new EventSource("/api/feed");
feed.onmessage = (e) => {
  const line = JSON.parse(e.data);
  const li = document.createElement("li");
  li.textContent = new Date(line.at).toLocaleTimeString() + " " + line.botId + ": " + line.text;
  if (!line.ok) li.className = "failed";
  document.getElementById("feed").prepend(li);
};
</script></body></html>`;
}
