import { element } from "./element.js";
import { connectingNote, errorNote, liveScreenAdvice, noneNote } from "./screen-note.js";

/** The panel's three parts: the frame each gets and what it is called where there is none. */
const PARTS = {
  screen: { frameId: "control-screen", title: "control screen", missing: "No live screen on this provider" },
  terminal: { frameId: "terminal", title: "terminal", missing: "No terminal on this provider" },
  files: { frameId: "files", title: "files", missing: "No Files window" },
};

/**
 * The panel of the bot you control: its screen in control mode, its
 * terminal and its Files window, each with a badge for its state (the
 * screens package's pages report theirs by postMessage), or, where the
 * provider has none, why.
 */
export class ControlPanel {
  /** @param onRelease () => void: the panel's Release button. */
  constructor(root, onRelease) {
    this.root = root;
    this.botId = undefined;
    root.querySelector("#control-release").onclick = () => onRelease(this.botId);
  }

  /** Shows the parts a takeover answered: `{ screen, terminal, files }`, each `{ live, url }` or `{ live: false, code, message }`. */
  open(botId, parts) {
    this.botId = botId;
    this.root.dataset.bot = botId;
    this.root.querySelector("#control-title").textContent = botId;
    for (const [name, part] of Object.entries(PARTS)) this.showPart(name, part, parts[name]);
    this.root.hidden = false;
    this.root.scrollIntoView({ behavior: "smooth", block: "nearest" });
  }

  showPart(name, part, opened) {
    const pane = this.root.querySelector(`[data-part="${name}"]`);
    const body = pane.querySelector(".pane-body");
    if (opened?.live) {
      const frame = element("iframe", { id: part.frameId, title: part.title, src: opened.url });
      // The Files page reports no state: loaded is as far as it goes.
      if (name === "files") frame.onload = () => this.setBadge("files", "connected");
      body.replaceChildren(frame, connectingNote(`Connecting to the ${part.title}…`));
      this.setBadge(name, "connecting");
    } else if (opened?.code === "UNSUPPORTED") {
      body.replaceChildren(noneNote(part.missing, opened.message, name === "screen" ? liveScreenAdvice() : undefined));
      this.setBadge(name, "none", "not available");
    } else {
      body.replaceChildren(
        errorNote(`The ${part.title} could not be opened`, opened?.code ?? "UNAVAILABLE", opened?.message ?? ""),
      );
      this.setBadge(name, "error", "error");
    }
  }

  setBadge(name, state, text = state) {
    const pane = this.root.querySelector(`[data-part="${name}"]`);
    const badge = pane.querySelector(".badge");
    badge.dataset.state = state;
    badge.textContent = text;
    // A pane with nothing live to show shrinks to its note.
    pane.dataset.state = state;
    if (state === "connected") pane.querySelector(".note")?.remove();
  }

  close() {
    this.botId = undefined;
    this.root.hidden = true;
    for (const body of this.root.querySelectorAll(".pane-body")) body.replaceChildren();
  }

  /** A state a frame of this panel posted; false when the frame is not one of its own. */
  onFrameState(source, state) {
    for (const name of ["screen", "terminal"]) {
      const frame = this.root.querySelector(`#${PARTS[name].frameId}`);
      if (frame?.contentWindow !== source) continue;
      if (state === "loading") return true;
      this.setBadge(name, state);
      return true;
    }
    return false;
  }
}
