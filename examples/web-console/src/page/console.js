import { followActivity } from "./activity-feed.js";
import { BotCard } from "./bot-card.js";
import { apiGet, apiPost } from "./console-api.js";
import { ControlPanel } from "./control-panel.js";
import { element } from "./element.js";

// The console page's script: cards for the bots, the control panel of the
// bot you control, the computer's state in the header and the activity
// feed, from the console's JSON API (src/web-console.ts).

/** How often the page asks who runs, who is controlled and how the computer is. */
const POLL_MS = 2000;

const cards = new Map();
const grid = document.getElementById("bots");
const banner = document.getElementById("page-error");
const releaseButton = document.getElementById("control-release");
const panel = new ControlPanel(document.getElementById("control"), async (botId) => {
  releaseButton.disabled = true;
  try {
    await cards.get(botId)?.run("release");
  } finally {
    releaseButton.disabled = false;
  }
});

/**
 * A card's operation: the control panel opens on a takeover and closes on
 * its release. It closes before the release is asked: the release revokes
 * the windows' capabilities, and a window still open would ask again with
 * one (a 401). A refused release opens the panel again.
 */
async function act(op, botId) {
  if (op === "release") panel.close();
  try {
    const answer = await apiPost(op, botId);
    if (op === "takeover") panel.open(botId, answer);
  } catch (error) {
    if (op === "release") reopenPanel(botId);
    throw error;
  } finally {
    await poll();
  }
}

/** The panel of a bot you still control, from the console's word on it (a reloaded page, a refused release). */
function reopenPanel(botId) {
  apiGet(`control/${encodeURIComponent(botId)}`).then(
    (parts) => panel.open(botId, parts),
    (error) => cards.get(botId)?.showRefusal(error),
  );
}

function showComputer(computer) {
  const badge = document.getElementById("computer-state");
  badge.dataset.state = computer.state;
  badge.textContent = computer.state;
  if (!computer.provider) return;
  const provider = document.getElementById("provider");
  provider.hidden = false;
  provider.querySelector(".provider-name").textContent = computer.provider.name;
  provider.querySelector(".provider-reason").textContent = computer.provider.reason;
  provider.title = `${computer.provider.name}: ${computer.provider.reason}`;
}

function showBots(bots) {
  if (cards.size === 0) {
    grid.removeAttribute("aria-busy");
    grid.replaceChildren();
    if (bots.length === 0) grid.append(element("p", { class: "empty-note", text: "No bots on this computer yet." }));
  }
  for (const bot of bots) {
    let card = cards.get(bot.botId);
    if (!card) {
      card = new BotCard(bot.botId, act);
      cards.set(bot.botId, card);
      grid.append(card.el);
      card.update(bot);
      card.loadScreen();
      if (bot.controlled) reopenPanel(bot.botId);
    } else card.update(bot);
  }
}

/** The page's own failure (the console server gone): a banner, until a poll gets an answer again. */
function showPageError(error) {
  banner.hidden = false;
  banner.replaceChildren(
    element("strong", { text: "The console is not answering. " }),
    `${error.code}: ${error.message} The page tries again every ${POLL_MS / 1000} s.`,
  );
}

async function poll() {
  try {
    const [bots, computer] = await Promise.all([apiGet("bots"), apiGet("computer")]);
    banner.hidden = true;
    showComputer(computer);
    showBots(bots);
  } catch (error) {
    showPageError(error);
  }
}

// The screens package's pages (viewer, terminal) say how their connection goes.
addEventListener("message", (event) => {
  const type = event.data?.type;
  if (type !== "agent-computer-screen" && type !== "agent-computer-terminal") return;
  if (panel.onFrameState(event.source, event.data.state)) return;
  for (const card of cards.values())
    if (card.frame && card.frame.contentWindow === event.source) card.onViewerState(event.data.state);
});

followActivity({
  list: document.getElementById("feed"),
  empty: document.getElementById("feed-empty"),
  badge: document.getElementById("feed-state"),
});
await poll();
setInterval(poll, POLL_MS);
