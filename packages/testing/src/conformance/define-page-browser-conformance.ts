import type { PageBrowser, PageSnapshot } from "@agent-computer/core";
import { expect, it } from "vitest";

/** Options of `definePageBrowserConformance`. */
export interface PageBrowserConformanceOptions {
  /** The browser under test, fresh or reused; called once per case. */
  browser: () => Promise<PageBrowser>;
  /** The URL where `PAGE_FIXTURES[name]` is served to that browser. */
  urlOf: (name: string) => string;
  /** Whether the browser lays pages out (boxes, hit-testing): the overlay case needs it. */
  layout?: boolean;
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
    "types a named secret only on its origins, and never shows it",
    async () => {
      const browser = await options.browser();
      const url = options.urlOf("login.html");
      const origin = new URL(url).origin;
      const first = await browser.navigate(url);
      const secretText = (origins: string[], name = "site-login") => ({ name, value: SECRET, origins });
      // Another site's secret: refused before anything is focused or typed.
      await expect(
        browser.act({ ref: byName(first, "Password").ref, action: "fill", secret: "site-login" }, undefined, {
          secretText: secretText(["https://elsewhere.example"]),
        }),
      ).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
      expect(byName(await browser.snapshot(), "Password").value ?? "").not.toMatch(/•/);
      // A secret named without the host's value is refused, not typed as nothing.
      await expect(
        browser.act({ ref: byName(first, "Password").ref, action: "fill", secret: "site-login" }),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      // Only into a password field: any other shows the value on the screen.
      await expect(
        browser.act({ ref: byName(first, "Username").ref, action: "fill", secret: "site-login" }, undefined, {
          secretText: secretText([origin]),
        }),
      ).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
      expect(byName(await browser.snapshot(), "Username").value ?? "").toBe("");
      await browser.act({ ref: byName(first, "Username").ref, action: "fill", value: "alice" });
      const typed = await browser.act(
        { ref: byName(first, "Password").ref, action: "fill", secret: "site-login" },
        undefined,
        { secretText: secretText([origin]) },
      );
      expect(typed.ok).toBe(true);
      expect(typed.progress).toContain("typed the secret site-login");
      // Not even its length.
      expect(typed.progress.join(" ")).not.toMatch(/characters/);
      // A page that shows the password (a "show password" control) does not show it in a snapshot.
      const reveal = await browser.act({ ref: byName(first, "Show password").ref, action: "click" });
      expect(byName(reveal.snapshot as PageSnapshot, "Password").value).toBe("[secret site-login]");
      const submitted = await browser.act({ ref: byName(first, "Sign in").ref, action: "click" });
      // The page got the value: it counts what it received.
      expect(submitted.snapshot?.text).toContain(`Welcome alice (${SECRET.length} characters)`);
      for (const value of [typed, reveal, submitted]) expect(JSON.stringify(value)).not.toContain(SECRET);
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
      // Toggles and tabs say which is on, and only the one that is.
      expect(byName(page, "Bold").pressed).toBe(true);
      expect(byName(page, "Italic").pressed).toBeUndefined();
      expect(byName(page, "Privacy")).toMatchObject({ role: "tab", selected: true });
      expect(byName(page, "General").selected).toBeUndefined();
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
      // The whole progress on failure: CI run D saw another count once, under load (not yet reproduced).
      expect(outcome.progress, JSON.stringify(outcome.progress)).toContain("typed 3 of 10 characters");
      await expect(browser.act({ ref: byName(page, "Search").ref, action: "type", value: "x" })).rejects.toMatchObject({
        code: "STALE_REF",
      });
    },
    timeout,
  );
  it(
    "answers a delta after a click: the re-rendered row gets a new ref, its old one is STALE_REF, the rest keep theirs",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("spa.html"));
      const finish = byName(page, "Finish Task 3");
      const other = byName(page, "Finish Task 20");
      const clicked = await browser.act({ ref: finish.ref, action: "click" }, {}, { delta: true });
      const delta = clicked.snapshot as PageSnapshot;
      expect(delta.delta).toMatchObject({ since: page.snapshotId, removed: [finish.ref], textUnchanged: false });
      expect(delta.elements.map((e) => e.name)).toEqual(["Reopen Task 3"]);
      expect(delta.elements[0]?.ref).not.toBe(finish.ref);
      expect(delta.text).toContain("1 of 30 done");
      expect(delta.text).not.toContain("Task 20");
      expect(delta.delta?.unchanged).toBe(page.elements.length - 1);
      await expect(browser.act({ ref: finish.ref, action: "click" })).rejects.toMatchObject({ code: "STALE_REF" });
      // An unchanged row keeps its ref and still acts on its own element.
      const again = await browser.act({ ref: other.ref, action: "click" }, {}, { delta: true });
      expect(again.snapshot?.elements.map((e) => e.name)).toEqual(["Reopen Task 20"]);
      expect(again.snapshot?.text).toContain("2 of 30 done");
      // Nothing changed since: an empty delta; a full snapshot on request lists everything.
      const quiet = await browser.snapshot({}, { delta: true });
      expect(quiet.delta).toMatchObject({ removed: [], textUnchanged: true });
      expect(quiet.elements).toEqual([]);
      const full = await browser.snapshot();
      expect(full.delta).toBeUndefined();
      expect(full.elements).toHaveLength(page.elements.length);
    },
    timeout,
  );

  it(
    "masks a password in full snapshots and in deltas",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("spa.html"));
      expect(byName(page, "Password").value).toMatch(/^•+$/);
      const typed = await browser.act(
        { ref: byName(page, "Password").ref, action: "fill", value: SECRET },
        {},
        { delta: true },
      );
      const delta = typed.snapshot as PageSnapshot;
      expect(delta.delta).toBeDefined();
      expect(byName(delta, "Password").value).toMatch(/^•+$/);
      for (const value of [page, typed, await browser.snapshot({}, { delta: true }), await browser.snapshot()])
        expect(JSON.stringify(value)).not.toContain(SECRET);
    },
    timeout,
  );

  it(
    "operates a page that accepts only the user's own (isTrusted) input",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("trusted.html"));
      const typed = await browser.act({ ref: byName(page, "Name").ref, action: "type", value: "ada" });
      expect(typed.ok).toBe(true);
      const done = await browser.act({ ref: byName(page, "Go").ref, action: "click" });
      expect(done.snapshot?.text).toContain("Trusted click, typed ada");
    },
    timeout,
  );

  it(
    "refuses a click on a covered element with a clear error instead of clicking what covers it",
    async () => {
      const browser = await options.browser();
      const page = await browser.navigate(options.urlOf("overlay.html"));
      const buy = byName(page, "Buy now");
      if (!options.layout) {
        // Without layout nothing covers anything: the emulator clicks the element itself.
        expect((await browser.act({ ref: buy.ref, action: "click" })).snapshot?.text).toContain("Bought");
        return;
      }
      await expect(browser.act({ ref: buy.ref, action: "click" })).rejects.toMatchObject({
        code: "CONFLICT",
        message: expect.stringMatching(/covers it.*Accept cookies/),
      });
      const after = await browser.snapshot();
      expect(after.text).toContain("Not bought");
      await browser.act({ ref: byName(after, "Accept cookies").ref, action: "click" });
      const bought = await browser.act({ ref: buy.ref, action: "click" });
      expect(bought.snapshot?.text).toContain("Bought");
    },
    timeout,
  );

  for (const [file, last, needle] of [
    ["table300.html", "Open order 300", "Customer 300"],
    ["links200.html", "Page 200", "is about topic 200."],
  ] as const) {
    it(
      `reaches the last element and text of ${file} by following only the hints, in at most 5 snapshots`,
      async () => {
        const browser = await options.browser();
        let snapshot = await browser.navigate(options.urlOf(file));
        const names = new Set<string>();
        let text = snapshot.text;
        let count = 1;
        for (const e of snapshot.elements) names.add(e.name);
        // Obeys the hint literally: the continuation it was handed, nothing else.
        while (snapshot.continuation && count < 5) {
          const { after, textFrom } = snapshot.continuation;
          snapshot = await browser.snapshot({}, { ...(after ? { after } : {}), textFrom });
          count++;
          for (const e of snapshot.elements) names.add(e.name);
          text += snapshot.text;
        }
        expect(snapshot.continuation).toBeUndefined();
        expect(names.has(last)).toBe(true);
        expect(text).toContain(needle);
        expect(names.size).toBe(file === "table300.html" ? 300 : 200);
        // The refs read along the way still act.
        const target = snapshot.elements.find((e) => e.name === last);
        expect((await browser.act({ ref: target?.ref ?? "", action: "scroll_into_view" })).ok).toBe(true);
      },
      timeout,
    );
  }
}
