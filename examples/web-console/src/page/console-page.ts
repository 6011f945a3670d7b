/**
 * The console page's markup: the header with the computer and its state,
 * the bot cards' grid, the control panel and the activity feed. The
 * stylesheet and the script modules beside this file fill it in (plain CSS
 * and browser modules, no framework and no build step).
 */
export function consolePage(computerId: string, assetPath: string): string {
  const id = escapeHtml(computerId);
  return `<!doctype html>
<html lang="en" data-computer-id="${id}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${id} · Agent Computer console</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='4' fill='%232563eb'/%3E%3C/svg%3E">
<link rel="stylesheet" href="${assetPath}console.css">
<script type="module" src="${assetPath}console.js"></script>
</head>
<body>
<header class="topbar">
  <div class="topbar-inner">
    <div class="brand"><span class="brand-mark" aria-hidden="true"></span>Agent Computer</div>
    <div class="computer">
      <div>
        <div class="eyebrow">Team computer</div>
        <h1 id="computer-id">${id}</h1>
      </div>
      <span id="computer-state" class="badge" data-state="loading">loading</span>
    </div>
    <div id="provider" class="provider" hidden><span class="provider-name"></span><span class="provider-reason"></span></div>
  </div>
</header>
<div id="page-error" class="banner" role="alert" hidden></div>
<main class="layout">
  <div class="main-column">
    <section aria-labelledby="bots-title">
      <div class="section-head">
        <h2 id="bots-title">Bots</h2>
        <p class="hint">Take control is refused while a bot runs: <strong>Stop the bot first</strong>, or wait
        until it asks for a takeover. While you hold control the bot cannot act on its screen; Release hands it back.</p>
      </div>
      <div id="bots" class="bot-grid" aria-busy="true"><p class="empty-note">Loading the bots…</p></div>
    </section>
    <section id="control" class="panel control-panel" aria-labelledby="control-title" hidden>
      <div class="panel-head">
        <div>
          <div class="eyebrow">You control</div>
          <h2 id="control-title"></h2>
        </div>
        <button id="control-release" class="button primary" type="button">Release</button>
      </div>
      <div class="control-grid">
        <div class="pane pane-screen" data-part="screen"><div class="pane-head">Screen <span class="badge"></span></div><div class="pane-body"></div></div>
        <div class="pane" data-part="terminal"><div class="pane-head">Terminal <span class="badge"></span></div><div class="pane-body"></div></div>
        <div class="pane" data-part="files"><div class="pane-head">Files <span class="badge"></span></div><div class="pane-body"></div></div>
      </div>
    </section>
  </div>
  <aside class="panel activity" aria-labelledby="activity-title">
    <div class="section-head">
      <h2 id="activity-title">Activity</h2>
      <span id="feed-state" class="badge" data-state="connecting">connecting</span>
    </div>
    <p id="feed-empty" class="empty-note">No activity yet. The bots' commands, your uploads and takeovers appear here as they happen.</p>
    <ol id="feed" class="feed"></ol>
  </aside>
</main>
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
