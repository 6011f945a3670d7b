import type { PageBrowser, PageSnapshot } from "@agent-computer/core";
import { expect, it } from "vitest";

/** Options of `definePageBrowserConformance`. */
export interface PageBrowserConformanceOptions {
  /** The browser under test, fresh or reused; called once per case. */
  browser: () => Promise<PageBrowser>;
  /** The URL where `PAGE_FIXTURES[name]` is served to that browser. */
  urlOf: (name: string) => string;
  /** Per-case timeout (default 60 s). */
  timeoutMs?: number;
}

const SECRET = "hunter2-very-secret";
const byName = (s: PageSnapshot, name: string | RegExp) => {
  const found = s.elements.find((e) => (typeof name === "string" ? e.name === name : name.test(e.name)));
  if (!found) throw new Error(`no element named ${String(name)} in ${s.elements.map((e) => e.name).join(", ")}`);
  return found;
};

/**
 * The behaviour every page browser shares (docs/architecture.md §5): run against the
 * emulator in core and against the bot's Chromium in the computer image.
 */
export function definePageBrowserConformance(options: PageBrowserConformanceOptions): void {
  const timeout = options.timeoutMs ?? 60_000;

  it(
    "masks a password everywhere, even after typing it",
    async () => {
      const browser = await options.browser();
      const first = await browser.navigate(options.urlOf("login.html"));
      expect(first.title).toBe("Sign in");
      await browser.act({ ref: byName(first, "Username").ref, action: "fill", value: "alice" });
      const typed = await browser.act({ ref: byName(first, "Password").ref, action: "fill", value: SECRET });
      expect(typed.ok).toBe(true);
      expect(typed.progress).toContain(`typed ${SECRET.length} of ${SECRET.length} characters`);
      const password = byName(typed.snapshot as PageSnapshot, "Password");
      expect(password.value).toMatch(/^•+$/);
      const submitted = await browser.act({ ref: byName(first, "Sign in").ref, action: "click" });
      expect(submitted.snapshot?.text).toContain(`Welcome alice (${SECRET.length} characters)`);
      const again = await browser.snapshot();
      for (const value of [typed, submitted, again]) expect(JSON.stringify(value)).not.toContain(SECRET);
    },
    timeout,
  );

  it(
    "lists at most 80 elements and counts the rest",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("buttons.html"));
      expect(page.elements).toHaveLength(80);
      expect(page.omittedElements).toBe(420);
      expect(page.elements[0]?.name).toBe("Button 1");
      expect(new Set(page.elements.map((e) => e.ref)).size).toBe(80);
    },
    timeout,
  );

  it(
    "refuses the ref of a re-rendered element with STALE_REF and never retargets it",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("list.html"));
      const oldApple = byName(page, "Remove Apple");
      const rerendered = await browser.act({ ref: byName(page, "Re-render").ref, action: "click" });
      expect(rerendered.ok).toBe(true);
      const newApple = byName(rerendered.snapshot as PageSnapshot, "Remove Apple");
      expect(newApple.ref).not.toBe(oldApple.ref);
      await expect(browser.act({ ref: oldApple.ref, action: "click" })).rejects.toMatchObject({ code: "STALE_REF" });
      // The look-alike was not clicked.
      expect(byName(await browser.snapshot(), "Remove Apple").ref).toBe(newApple.ref);
    },
    timeout,
  );

  it(
    "answers a form inside a frame with UNSUPPORTED pointing to the desktop tools",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("iframe.html"));
      const frame = byName(page, "Card details");
      expect(frame).toMatchObject({ role: "frame", unreachable: "frame" });
      await expect(browser.act({ ref: frame.ref, action: "click" })).rejects.toMatchObject({
        code: "UNSUPPORTED",
        message: expect.stringMatching(/computer_act/),
      });
    },
    timeout,
  );

  it(
    "selects an option and checks a checkbox",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("choices.html"));
      const select = byName(page, "Email frequency");
      expect(select.options).toEqual(["Daily", "Weekly", "Never"]);
      const selected = await browser.act({ ref: select.ref, action: "select", value: "Weekly" });
      expect(byName(selected.snapshot as PageSnapshot, "Email frequency").value).toBe("Weekly");
      const box = byName(page, "I accept the terms");
      expect(box).toMatchObject({ role: "checkbox", checked: false });
      const checked = await browser.act({ ref: box.ref, action: "check" });
      expect(byName(checked.snapshot as PageSnapshot, "I accept the terms").checked).toBe(true);
      expect(checked.snapshot?.text).toContain("Frequency w, terms true");
      await expect(browser.act({ ref: box.ref, action: "select", value: "x" })).rejects.toMatchObject({
        code: "UNSUPPORTED",
      });
    },
    timeout,
  );

  it(
    "reports confirmed progress and an uncertain outcome when the page navigates away mid-action",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("leave.html"));
      const outcome = await browser.act({ ref: byName(page, "Search").ref, action: "type", value: "abcdefghij" });
      expect(outcome).toMatchObject({ ok: false, uncertain: true });
      expect(outcome.progress).toContain("typed 3 of 10 characters");
      await expect(browser.act({ ref: byName(page, "Search").ref, action: "type", value: "x" })).rejects.toMatchObject({
        code: "STALE_REF",
      });
    },
    timeout,
  );
}
