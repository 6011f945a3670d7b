import type { PageElement } from "@agent-computer/core";

/** FNV-1a over a string: compares what was shown without keeping it (values stay out of the snapshot memory). */
export function hashOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** What a model reads of an element, hashed: a change here puts it in a delta. */
export function shownHash(e: Omit<PageElement, "ref">): number {
  return hashOf(
    JSON.stringify([
      e.role,
      e.name,
      e.value,
      e.options,
      e.checked,
      e.disabled,
      e.expanded,
      e.focused,
      e.unreachable,
      e.pressed,
      e.selected,
    ]),
  );
}
