import { Window } from "happy-dom";
import { describe, expect, it } from "vitest";
import { VIEWER_FAIL_AFTER_MS, viewerPage } from "./viewer-page.js";

// Runs the page's own script against a DOM (happy-dom) with a stand-in for
// noVNC's RFB class and hand-driven timers: the state machine and the
// postMessage reporter, without a browser. A real Chromium drives the page
// against a real computer in the end-to-end suite.

class FakeRfb extends EventTarget {
  static made: FakeRfb[] = [];
  viewOnly = false;
  scaleViewport = false;
  resizeSession = true;
  focusOnClick = true;
  background = "";
  disconnected = false;
  constructor(
    readonly target: unknown,
    readonly url: string,
    readonly options: unknown,
  ) {
    super();
    FakeRfb.made.push(this);
  }
  disconnect() {
    this.disconnected = true;
    this.dispatchEvent(new CustomEvent("disconnect", { detail: { clean: true } }));
  }
}

async function load(hash: string, options: { importFails?: boolean; storage?: Map<string, string> } = {}) {
  FakeRfb.made = [];
  const page = viewerPage({
    publicPath: "/screens",
    rfbModule: "/screens/novnc/1.7.0/core/rfb.js",
    frameAncestors: "'self'",
  });
  const script = /<script type="module">([\s\S]*?)<\/script>/.exec(page.html)![1]!;
  const dom = new Window({ url: `https://app.example/screens/viewer${hash}` });
  dom.document.write(page.html.replace(/<script[\s\S]*?<\/script>/, ""));
  const states: string[] = [];
  const timers = new Map<number, () => void>();
  let nextTimer = 1;
  const imported: string[] = [];
  const storage = options.storage ?? new Map<string, string>();
  let reloads = 0;
  const win = {
    VideoDecoder: class {},
    sessionStorage: {
      getItem: (key: string) => storage.get(key) ?? null,
      setItem: (key: string, value: string) => void storage.set(key, value),
      removeItem: (key: string) => void storage.delete(key),
    },
    parent: {
      postMessage: (message: { type: string; state: string }) => states.push(`${message.type}:${message.state}`),
    },
    addEventListener: () => {},
  };
  let decoderAtImport: boolean | undefined;
  const run = new Function(
    "window",
    "document",
    "location",
    "setTimeout",
    "clearTimeout",
    "URLSearchParams",
    "__import",
    `return (async () => {${script.replace("await import(", "await __import(")}})();`,
  );
  const location = new Proxy(dom.location, {
    get: (target, key) => (key === "reload" ? () => void reloads++ : Reflect.get(target, key, target)),
  });
  await run(
    win,
    dom.document,
    location,
    (fn: () => void) => {
      timers.set(nextTimer, fn);
      return nextTimer++;
    },
    (id: number) => timers.delete(id),
    URLSearchParams,
    async (url: string) => {
      decoderAtImport = "VideoDecoder" in win;
      imported.push(url);
      if (options.importFails) throw new Error("offline");
      return { default: FakeRfb };
    },
  );
  await new Promise((r) => setTimeout(r, 0));
  return {
    states: () => states.map((s) => s.replace("agent-computer-screen:", "")),
    raw: states,
    dom,
    imported,
    storage,
    reloads: () => reloads,
    decoderAtImport: () => decoderAtImport,
    fireTimers: () => {
      const pending = [...timers.values()];
      timers.clear();
      for (const fn of pending) fn();
    },
    retry: () => dom.document.getElementById("retry") as unknown as { hidden: boolean; click(): void },
  };
}

describe("the viewer page script", () => {
  it("removes VideoDecoder before importing noVNC and reports loading, connecting, connected, disconnected", async () => {
    const page = await load("#c=abc_-123&mode=view");
    expect(page.decoderAtImport()).toBe(false);
    expect(page.imported).toEqual(["/screens/novnc/1.7.0/core/rfb.js"]);
    expect(page.raw[0]).toBe("agent-computer-screen:loading");
    expect(page.states()).toEqual(["loading", "connecting"]);
    const rfb = FakeRfb.made[0]!;
    expect(rfb.url).toBe("wss://app.example/screens/c/abc_-123");
    expect([rfb.viewOnly, rfb.scaleViewport, rfb.resizeSession]).toEqual([true, true, false]);
    rfb.dispatchEvent(new CustomEvent("connect"));
    expect(page.dom.document.documentElement.dataset.state).toBe("connected");
    page.fireTimers(); // the 15 s watchdog, already disarmed
    rfb.dispatchEvent(new CustomEvent("disconnect", { detail: { clean: true } }));
    expect(page.states()).toEqual(["loading", "connecting", "connected", "disconnected"]);
    expect(page.retry().hidden).toBe(false);
  });

  it("is not view-only in control mode", async () => {
    await load("#c=abc&mode=control");
    expect(FakeRfb.made[0]!.viewOnly).toBe(false);
  });

  it(`fails and offers Retry when ${VIEWER_FAIL_AFTER_MS / 1000} s pass without connecting, and Retry starts over`, async () => {
    const page = await load("#c=abc&mode=view");
    expect(page.retry().hidden).toBe(true);
    page.fireTimers();
    expect(page.states()).toEqual(["loading", "connecting", "failed"]);
    expect(FakeRfb.made[0]!.disconnected).toBe(true);
    expect(page.retry().hidden).toBe(false);
    page.retry().click();
    await new Promise((r) => setTimeout(r, 0));
    expect(page.states().slice(3)).toEqual(["loading", "connecting"]);
    expect(FakeRfb.made).toHaveLength(2);
  });

  it("fails on a connection that drops before it connected, on a missing capability, and when noVNC does not load", async () => {
    const page = await load("#c=abc");
    FakeRfb.made[0]!.dispatchEvent(new CustomEvent("disconnect", { detail: { clean: true } }));
    expect(page.states()).toEqual(["loading", "connecting", "failed"]);
    expect((await load("")).states()).toEqual(["loading", "failed"]);
    expect((await load("#c=a/b")).states()).toEqual(["loading", "failed"]);
  });

  it("reloads itself when noVNC does not load (a request the browser cut), at most 3 times, then fails", async () => {
    const storage = new Map<string, string>();
    for (let attempt = 1; attempt <= 3; attempt++) {
      const page = await load("#c=abc&mode=view", { importFails: true, storage });
      expect(page.states()).toEqual(["loading"]);
      page.fireTimers();
      expect(page.reloads()).toBe(1);
      expect([...storage.values()]).toEqual([String(attempt)]);
    }
    const last = await load("#c=abc&mode=view", { importFails: true, storage });
    expect(last.states()).toEqual(["loading", "failed"]);
    expect(last.reloads()).toBe(0);
    // The count is gone, so the next visit gets its reloads again; a load that works clears it too.
    expect(storage.size).toBe(0);
    storage.set("agent-computer-viewer-reloads:view:abc", "2");
    expect((await load("#c=abc&mode=view", { storage })).states()).toEqual(["loading", "connecting"]);
    expect(storage.size).toBe(0);
    // Another frame (mode or capability) counts apart.
    storage.set("agent-computer-viewer-reloads:view:abc", "3");
    expect((await load("#c=abc&mode=control", { importFails: true, storage })).states()).toEqual(["loading"]);
  });
});
