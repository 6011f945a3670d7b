import type { CdpConnection } from "./cdp-connection.js";

/** Runs one page-script command on the element and answers its result. */
export type ElementScript = (command: Record<string, unknown>) => Promise<Record<string, unknown>>;

interface KeyInfo {
  key: string;
  code: string;
  keyCode: number;
  text?: string;
}

// The keys `press` names most (docs/architecture.md §5); anything else is a single character.
const KEYS: Readonly<Record<string, KeyInfo>> = {
  Enter: { key: "Enter", code: "Enter", keyCode: 13, text: "\r" },
  Tab: { key: "Tab", code: "Tab", keyCode: 9 },
  Escape: { key: "Escape", code: "Escape", keyCode: 27 },
  Backspace: { key: "Backspace", code: "Backspace", keyCode: 8 },
  Delete: { key: "Delete", code: "Delete", keyCode: 46 },
  Space: { key: " ", code: "Space", keyCode: 32, text: " " },
  " ": { key: " ", code: "Space", keyCode: 32, text: " " },
  ArrowUp: { key: "ArrowUp", code: "ArrowUp", keyCode: 38 },
  ArrowDown: { key: "ArrowDown", code: "ArrowDown", keyCode: 40 },
  ArrowLeft: { key: "ArrowLeft", code: "ArrowLeft", keyCode: 37 },
  ArrowRight: { key: "ArrowRight", code: "ArrowRight", keyCode: 39 },
  Home: { key: "Home", code: "Home", keyCode: 36 },
  End: { key: "End", code: "End", keyCode: 35 },
  PageUp: { key: "PageUp", code: "PageUp", keyCode: 33 },
  PageDown: { key: "PageDown", code: "PageDown", keyCode: 34 },
};
const MODIFIERS: Readonly<Record<string, number>> = { Alt: 1, Control: 2, Ctrl: 2, Meta: 4, Shift: 8 };

function keyOf(name: string): KeyInfo {
  const known = KEYS[name];
  if (known) return known;
  const upper = name.toUpperCase();
  const code = /^[A-Z]$/.test(upper) ? `Key${upper}` : /^[0-9]$/.test(name) ? `Digit${name}` : "";
  return {
    key: name,
    code,
    keyCode: name.length === 1 ? upper.charCodeAt(0) : 0,
    ...(name.length === 1 ? { text: name } : {}),
  };
}

/**
 * Page actions as the user's own input (issue 28): CDP `Input.*` events at
 * the element's box, so pages that ignore synthetic events (`isTrusted`
 * false) work. The isolated-world script only finds, scrolls to and
 * hit-tests the element; an overlay answers CONFLICT, never a click on it.
 */
export class CdpTrustedInput {
  constructor(private readonly cdp: CdpConnection) {}

  async click(script: ElementScript, want?: boolean): Promise<Record<string, unknown>> {
    const spot = await script({ action: "locate", purpose: "click", ...(want === undefined ? {} : { want }) });
    if (spot.error || spot.done) return spot;
    await this.mouseClick(spot.point as { x: number; y: number });
    if (want === undefined) return { progress: ["clicked"] };
    return script({ action: "checked-is", want });
  }

  async hover(script: ElementScript): Promise<Record<string, unknown>> {
    const spot = await script({ action: "locate", purpose: "hover" });
    if (spot.error) return spot;
    const { x, y } = spot.point as { x: number; y: number };
    await this.cdp.call("Input.dispatchMouseEvent", { type: "mouseMoved", x, y });
    return { progress: ["hovered"] };
  }

  async press(script: ElementScript, combo: string): Promise<Record<string, unknown>> {
    const focus = await script({ action: "focus-for-typing", purpose: "press", anyElement: true });
    if (focus.error) return focus;
    const names = combo.split("+").map((n) => n.trim() || " ");
    const modifiers = names.slice(0, -1).reduce((m, n) => m | (MODIFIERS[n] ?? 0), 0);
    await this.key(keyOf(names[names.length - 1] ?? combo), modifiers);
    return { progress: [`pressed ${combo}`] };
  }

  /** Types character by character, stopping when the page navigates or the field goes away. */
  async type(script: ElementScript, value: string): Promise<Record<string, unknown>> {
    const chars = Array.from(value);
    const first = await script({ action: "typing-ok", start: true });
    if (first.error) return first;
    for (let typed = 0; typed < chars.length; typed++) {
      // A page that is going away loses the script's world: that too means it navigated.
      const check =
        typed === 0 ? first : await script({ action: "typing-ok", href: first.href }).catch(() => undefined);
      if (!check || check.error || !check.ok) return { progress: [], typed, navigated: true };
      const ch = chars[typed] as string;
      if (/^[\x20-\x7e]$/.test(ch)) await this.key(keyOf(ch), 0);
      else await this.cdp.call("Input.insertText", { text: ch });
    }
    return { progress: [], typed: chars.length };
  }

  private async mouseClick({ x, y }: { x: number; y: number }): Promise<void> {
    await this.cdp.call("Input.dispatchMouseEvent", { type: "mouseMoved", x, y });
    await this.cdp.call("Input.dispatchMouseEvent", { type: "mousePressed", x, y, button: "left", clickCount: 1 });
    await this.cdp.call("Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button: "left", clickCount: 1 });
  }

  private async key(k: KeyInfo, modifiers: number): Promise<void> {
    const text = modifiers & ~8 ? undefined : k.text;
    const base = { key: k.key, code: k.code, windowsVirtualKeyCode: k.keyCode, modifiers };
    await this.cdp.call("Input.dispatchKeyEvent", {
      type: text ? "keyDown" : "rawKeyDown",
      ...base,
      ...(text ? { text, unmodifiedText: text } : {}),
    });
    await this.cdp.call("Input.dispatchKeyEvent", { type: "keyUp", ...base });
  }
}
