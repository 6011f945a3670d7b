import { apiGet } from "./console-api.js";
import { element, spinner } from "./element.js";
import { connectingNote, errorNote, liveScreenAdvice, noneNote, waitingNote } from "./screen-note.js";

/** What a button says while its request is in flight. */
const PROGRESS = {
  takeover: "Taking control…",
  release: "Releasing…",
  stop: "Stopping…",
  start: "Starting…",
};

/**
 * One bot's card: its state badge, its screen (or why there is none), its
 * buttons and, in place under them, the refusal or failure of the last
 * request. `data-screen` on the card says what the screen area shows:
 * starting, connecting, live, none (the provider has no live screen), error.
 */
export class BotCard {
  /** @param act (op, botId) => Promise: the console's action; a throw is shown in place. */
  constructor(botId, act) {
    this.botId = botId;
    this.act = act;
    this.bot = { botId, state: "starting", controlled: false };
    this.busy = undefined;
    this.failedInARow = 0;
    this.badge = element("span", { class: "state badge" });
    this.screen = element("div", { class: "screen" });
    this.message = element("p", { class: "message", role: "status" });
    this.buttons = {
      takeover: this.button("takeover", "Take control", "primary"),
      release: this.button("release", "Release", "primary"),
      stop: this.button("stop", "Stop bot", "secondary"),
      start: this.button("start", "Start bot", "secondary"),
    };
    this.el = element(
      "article",
      { class: "bot panel", "data-bot": botId },
      element(
        "header",
        { class: "bot-head" },
        element("span", { class: "avatar", "aria-hidden": "true", text: botId.slice(0, 1) }),
        element("h3", { text: botId }),
        this.badge,
      ),
      this.screen,
      element("div", { class: "actions" }, ...Object.values(this.buttons)),
      this.message,
    );
  }

  button(op, label, kind) {
    const button = element("button", { class: `button ${kind}`, type: "button", "data-op": op, text: label });
    button.dataset.label = label;
    button.onclick = () => this.run(op);
    return button;
  }

  /** The bot's state from the console's poll: badge, which buttons show, a failed start's reason. */
  update(bot) {
    this.bot = bot;
    const state = bot.controlled ? "controlled" : bot.state;
    this.badge.dataset.state = state;
    this.badge.textContent = bot.controlled ? "controlled by you" : bot.state;
    this.el.dataset.state = state;
    const moving = bot.state === "starting" || bot.state === "stopping";
    const idle = bot.state === "idle" || bot.state === "failed";
    this.buttons.takeover.hidden = bot.controlled;
    this.buttons.release.hidden = !bot.controlled;
    this.buttons.stop.hidden = bot.controlled || idle;
    this.buttons.start.hidden = bot.controlled || !idle;
    for (const [op, button] of Object.entries(this.buttons)) {
      const waits = moving && op !== "release";
      button.disabled = this.busy !== undefined || waits;
      button.title = waits ? `Wait until ${this.botId} has finished ${bot.state}` : "";
    }
    if (bot.failure && !this.busy && this.message.dataset.kind !== "error")
      this.showRefusal({ code: bot.failure.code, message: `${this.botId} could not start: ${bot.failure.message}` });
  }

  /** Runs one of the card's operations: progress on its button, the others disabled, a refusal in place. */
  async run(op) {
    if (this.busy) return;
    this.busy = op;
    const button = this.buttons[op];
    button.setAttribute("aria-busy", "true");
    button.replaceChildren(spinner(), PROGRESS[op]);
    this.clearMessage();
    if (op === "start" || op === "stop")
      this.showProgress(
        op === "start"
          ? "Starting the bot: its first calls may resume the computer."
          : "Stopping: the run ends and its home is saved.",
      );
    this.update(this.bot);
    try {
      await this.act(op, this.botId);
      this.clearMessage();
    } catch (error) {
      this.showRefusal(error);
    } finally {
      this.busy = undefined;
      button.removeAttribute("aria-busy");
      button.replaceChildren(button.dataset.label);
      this.update(this.bot);
    }
  }

  showRefusal(error) {
    this.message.dataset.kind = "error";
    this.message.replaceChildren(
      element("span", { class: "code", text: error.code ?? "UNAVAILABLE" }),
      element("span", { class: "text", text: error.message }),
    );
  }

  showProgress(text) {
    this.message.dataset.kind = "progress";
    this.message.replaceChildren(spinner(), element("span", { class: "text", text }));
  }

  clearMessage() {
    delete this.message.dataset.kind;
    this.message.replaceChildren();
  }

  /** Asks for a view of the screen and shows it, or why there is none. The first ask waits for the computer. */
  async loadScreen() {
    const starting = this.bot.state === "starting";
    this.showNote(
      "starting",
      starting
        ? waitingNote(
            `Starting ${this.botId}…`,
            "Its first calls provision or resume the computer; this can take a minute.",
          )
        : waitingNote("Opening the screen…", "A computer that sleeps is resumed first; this can take a minute."),
    );
    let entry;
    try {
      entry = await apiGet(`screen/${encodeURIComponent(this.botId)}`);
    } catch (error) {
      return this.showNote(
        "error",
        errorNote("The screen could not be opened", error.code, error.message, () => this.loadScreen()),
      );
    }
    if (entry.live) return this.showViewer(entry.viewerUrl);
    if (entry.code === "UNSUPPORTED")
      return this.showNote("none", noneNote("No live screen on this provider", entry.message, liveScreenAdvice()));
    this.showNote(
      "error",
      errorNote("The screen could not be opened", entry.code, entry.message, () => this.loadScreen()),
    );
  }

  /** A fresh frame for each capability: only the fragment would change, and that does not reload a page. */
  showViewer(url) {
    const frame = element("iframe", { id: `screen-${this.botId}`, title: `${this.botId}'s screen`, src: url });
    this.frame = frame;
    this.screen.replaceChildren(frame, connectingNote("Connecting to the screen…"));
    this.el.dataset.screen = "connecting";
  }

  showNote(kind, note) {
    this.frame = undefined;
    this.screen.replaceChildren(note);
    this.el.dataset.screen = kind;
  }

  /** The viewer page's state (its postMessage). A dropped screen gets a fresh view: a run's end replaces it. */
  onViewerState(state) {
    const note = this.screen.querySelector(".note");
    if (state === "connected") {
      note?.remove();
      this.el.dataset.screen = "live";
      this.failedInARow = 0;
    } else if (state === "disconnected") {
      this.screen.querySelector(".note")?.remove();
      this.screen.append(connectingNote("The screen dropped; reconnecting…"));
      this.el.dataset.screen = "connecting";
      setTimeout(() => this.loadScreen(), 1000);
    } else if (state === "failed" && !this.failedInARow) {
      // Retried once without asking: a screen whose desktop was just replaced fails with its old capability.
      this.failedInARow = 1;
      this.loadScreen();
    } else if (state === "failed") {
      this.showNote(
        "error",
        errorNote(
          "The screen did not connect",
          "UNAVAILABLE",
          "The viewer could not reach the computer's screen.",
          () => this.loadScreen(),
        ),
      );
    }
  }
}
