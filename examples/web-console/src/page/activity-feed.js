import { element } from "./element.js";

/** Enough lines to scroll back through a session without the page growing for ever. */
const KEPT_LINES = 300;

/**
 * The activity feed: the bots' commands, a person's uploads and takeovers,
 * newest first, from the console's server-sent events. Its badge says
 * whether the stream is live; EventSource reconnects by itself.
 */
export function followActivity({ list, empty, badge }) {
  const show = (state) => {
    badge.dataset.state = state;
    badge.textContent = state;
  };
  const source = new EventSource("/api/feed");
  source.onopen = () => show("live");
  source.onerror = () => show(source.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting");
  // A reconnected stream replays the server's recent lines: the ones shown already are skipped.
  let lastShown = 0;
  source.onmessage = (event) => {
    const id = Number(event.lastEventId);
    if (id <= lastShown) return;
    lastShown = id;
    const line = JSON.parse(event.data);
    const at = new Date(line.at);
    list.prepend(
      element(
        "li",
        { class: line.ok ? undefined : "failed" },
        element("time", { datetime: at.toISOString(), text: at.toLocaleTimeString() }),
        element("span", { class: "who", text: line.botId }),
        element("span", { class: "what", text: line.text }),
      ),
    );
    while (list.children.length > KEPT_LINES) list.lastElementChild.remove();
    empty.hidden = true;
  };
  return source;
}
