import { element, spinner } from "./element.js";

/**
 * The notes laid over a screen (or a control pane) while it has nothing
 * live to show: why, and what to do. `data-kind` picks the colour:
 * starting, connecting, none (this provider has no live screen), error.
 */

/** A request under way that may take long: a title, why it may, and the seconds waited so far. */
export function waitingNote(title, why) {
  const waited = element("p", { class: "waited" });
  const started = Date.now();
  const tick = () => {
    if (!waited.isConnected && Date.now() - started > 1000) return clearInterval(timer);
    waited.textContent = `Waiting ${Math.round((Date.now() - started) / 1000)} s`;
  };
  const timer = setInterval(tick, 1000);
  tick();
  return element(
    "div",
    { class: "note", "data-kind": "starting" },
    spinner(),
    element("strong", { text: title }),
    element("p", { text: why }),
    waited,
  );
}

/** The viewer page is loading noVNC or connecting to the gateway. */
export function connectingNote(title) {
  return element("div", { class: "note", "data-kind": "connecting" }, spinner(), element("strong", { text: title }));
}

/** The provider has no live screen (or terminal): plainly, with the runtime's reason and what to do. */
export function noneNote(title, reason, whatToDo) {
  return element(
    "div",
    { class: "note", "data-kind": "none" },
    element("span", { class: "note-icon", "aria-hidden": "true", text: "–" }),
    element("strong", { text: title }),
    element("p", { class: "reason", text: reason }),
    whatToDo,
  );
}

/** A request or a screen failed: its code and message, and a Retry when one can help. */
export function errorNote(title, code, message, onRetry) {
  let retry;
  if (onRetry) {
    retry = element("button", { class: "button secondary", type: "button", "data-op": "retry", text: "Retry" });
    retry.onclick = onRetry;
  }
  return element(
    "div",
    { class: "note", "data-kind": "error", role: "alert" },
    element("span", { class: "note-icon", "aria-hidden": "true", text: "!" }),
    element("strong", { text: title }),
    element("p", { class: "reason" }, element("code", { text: code }), ` ${message}`),
    retry,
  );
}

/** What to do on a provider without live screens: run the console on one that has them. */
export function liveScreenAdvice() {
  return element(
    "p",
    {},
    "To watch the bots live, run the console on a provider with a desktop: start Docker and run ",
    element("code", { text: "SANDBOX_PROVIDER=docker npm run console" }),
    ".",
  );
}
