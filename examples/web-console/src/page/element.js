/**
 * An element with its attributes and children. Strings become text nodes:
 * nothing the API sends (bot ids, messages, feed lines) is parsed as HTML.
 */
export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.filter((child) => child !== undefined && child !== null));
  return node;
}

/** A spinning ring: the request or start it sits beside is under way. */
export function spinner() {
  return element("span", { class: "spinner", "aria-hidden": "true" });
}
