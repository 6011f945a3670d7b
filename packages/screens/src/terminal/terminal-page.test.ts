import { Window } from "happy-dom";
import { describe, expect, it } from "vitest";
import { TERMINAL_FAIL_AFTER_MS, terminalPage } from "./terminal-page.js";

// Runs the page's own script against a DOM (happy-dom) with stand-ins for
// xterm's Terminal and FitAddon and for WebSocket, and hand-driven timers:
// the state machine, the wire protocol and the postMessage reporter,
// without a browser. A real Chromium drives the page against a real
// computer in the end-to-end suite.

class FakeTerminal {
  static made: FakeTerminal[] = [];
  cols = 80;
  rows = 24;
  written: Uint8Array[] = [];
  resets = 0;
  focused = 0;
  addons: unknown[] = [];
  lines = ["$ ls", "a  b", "$ "];
  viewportY = 0;
  private handlers: Record<string, (value: never) => void> = {};
  constructor(readonly options: unknown) {
    FakeTerminal.made.push(this);
  }
  get buffer() {
    const lines = this.lines;
    return {
      active: {
        viewportY: this.viewportY,
        length: lines.length,
        getLine: (i: number) => ({ translateToString: (trim: boolean) => (trim ? lines[i]!.trimEnd() : lines[i]) }),
      },
    };
  }
  loadAddon(addon: unknown) {
    this.addons.push(addon);
  }
  open() {}
  reset() {
    this.resets++;
  }
  focus() {
    this.focused++;
  }
  write(data: Uint8Array) {
    this.written.push(data);
  }
  onData(fn: (data: string) => void) {
    this.handlers.data = fn as never;
  }
  onBinary(fn: (data: string) => void) {
    this.handlers.binary = fn as never;
  }
  onResize(fn: (size: { cols: number; rows: number }) => void) {
    this.handlers.resize = fn as never;
  }
  type(data: string) {
    (this.handlers.data as (d: string) => void)(data);
  }
  mouse(data: string) {
    (this.handlers.binary as (d: string) => void)(data);
  }
  resize(cols: number, rows: number) {
    this.cols = cols;
    this.rows = rows;
    (this.handlers.resize as (s: object) => void)({ cols, rows });
  }
}

class FakeFit {
  fits = 0;
  fit() {
    this.fits++;
  }
}

class FakeSocket {
  static made: FakeSocket[] = [];
  readyState = 0;
  binaryType = "blob";
  sent: (string | Uint8Array)[] = [];
  closedByPage = false;
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event?: { code: number }) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.made.push(this);
  }
  send(data: string | Uint8Array) {
    this.sent.push(data);
  }
  close() {
    this.closedByPage = true;
    this.end();
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  /** Closed with `code` (as a browser reports it); without one, as the page's own close. */
  end(code?: number) {
    this.readyState = 3;
    this.onclose?.(code === undefined ? undefined : { code });
  }
}

function load(hash: string, options: { noXterm?: boolean; storage?: Map<string, string> } = {}) {
  FakeTerminal.made = [];
  FakeSocket.made = [];
  const page = terminalPage({
    publicPath: "/screens",
    files: { script: "xterm-6.0.0.js", stylesheet: "xterm-6.0.0.css", fit: "addon-fit-0.11.0.js" },
    frameAncestors: "'self'",
  });
  const script = /<script>([\s\S]*?)<\/script>/.exec(page.html)![1]!;
  const dom = new Window({ url: `https://app.example/screens/terminal${hash}` });
  dom.document.write(page.html.replace(/<script[\s\S]*?<\/script>|<link [^>]*>/g, ""));
  const states: string[] = [];
  const timers = new Map<number, () => void>();
  let nextTimer = 1;
  const storage = options.storage ?? new Map<string, string>();
  let reloads = 0;
  const win: Record<string, unknown> = {
    sessionStorage: {
      getItem: (key: string) => storage.get(key) ?? null,
      setItem: (key: string, value: string) => void storage.set(key, value),
      removeItem: (key: string) => void storage.delete(key),
    },
    parent: {
      postMessage: (message: { type: string; state: string }) => states.push(`${message.type}:${message.state}`),
    },
    addEventListener: () => {},
    ...(options.noXterm ? {} : { Terminal: FakeTerminal, FitAddon: { FitAddon: FakeFit } }),
  };
  new Function(
    "window",
    "document",
    "location",
    "setTimeout",
    "clearTimeout",
    "URLSearchParams",
    "WebSocket",
    "TextEncoder",
    "ResizeObserver",
    script,
  )(
    win,
    dom.document,
    new Proxy(dom.location, {
      get: (target, key) => (key === "reload" ? () => void reloads++ : Reflect.get(target, key, target)),
    }),
    (fn: () => void) => {
      timers.set(nextTimer, fn);
      return nextTimer++;
    },
    (id: number) => timers.delete(id),
    URLSearchParams,
    FakeSocket,
    TextEncoder,
    undefined,
  );
  return {
    states: () => states.map((s) => s.replace("agent-computer-terminal:", "")),
    raw: states,
    dom,
    reloads: () => reloads,
    text: (options?: { all: boolean }) => (win.terminalText as (o?: { all: boolean }) => string)(options),
    term: () => FakeTerminal.made[0]!,
    socket: (i = -1) => FakeSocket.made.at(i)!,
    fireTimers: () => {
      const pending = [...timers.values()];
      timers.clear();
      for (const fn of pending) fn();
    },
    retry: () => dom.document.getElementById("retry") as unknown as { hidden: boolean; click(): void },
  };
}

describe("the terminal page script", () => {
  it("connects to /t/<sealed>, reports connecting, connected, disconnected, and speaks the wire protocol", () => {
    const page = load("#c=abc_-123");
    expect(page.raw).toEqual(["agent-computer-terminal:connecting"]);
    const socket = page.socket();
    expect(socket.url).toBe("wss://app.example/screens/t/abc_-123");
    expect(socket.binaryType).toBe("arraybuffer");
    socket.open();
    expect(page.states()).toEqual(["connecting", "connected"]);
    expect(page.dom.document.documentElement.dataset.state).toBe("connected");
    expect(page.term().focused).toBe(1);
    // The size goes up first, as a text frame.
    expect(socket.sent).toEqual([JSON.stringify({ type: "resize", cols: 80, rows: 24 })]);
    // Keystrokes as UTF-8 in binary frames; legacy mouse reports byte for byte.
    page.term().type("é\r");
    page.term().mouse("\x1b[M\xff");
    expect(socket.sent.slice(1).map((s) => [...(s as Uint8Array)])).toEqual([
      [0xc3, 0xa9, 0x0d],
      [0x1b, 0x5b, 0x4d, 0xff],
    ]);
    page.term().resize(120, 40);
    expect(socket.sent.at(-1)).toBe(JSON.stringify({ type: "resize", cols: 120, rows: 40 }));
    // Binary frames are terminal output; text frames are not written.
    socket.onmessage?.({ data: new Uint8Array([104, 105]).buffer });
    socket.onmessage?.({ data: '{"type":"something"}' });
    expect(page.term().written.map((w) => [...w])).toEqual([[104, 105]]);
    page.fireTimers(); // the watchdog, already disarmed
    socket.end();
    expect(page.states()).toEqual(["connecting", "connected", "disconnected"]);
    expect(page.retry().hidden).toBe(false);
  });

  it("reconnects by itself to a new shell when the connection drops, and not when the shell or the control ended", () => {
    const page = load("#c=abc");
    page.socket().open();
    page.term().written.push(new Uint8Array([36]));
    // A drop (1006: no close frame): "connecting" again, a new socket after the pause, the screen kept.
    page.socket().end(1006);
    expect(page.states()).toEqual(["connecting", "connected", "connecting"]);
    expect(page.dom.document.getElementById("message")?.textContent).toBe("Connection lost; reconnecting…");
    expect(page.retry().hidden).toBe(true);
    expect(FakeSocket.made).toHaveLength(1);
    page.fireTimers();
    expect(FakeSocket.made).toHaveLength(2);
    expect(page.term().resets).toBe(1);
    page.socket().open();
    expect(page.states().at(-1)).toBe("connected");
    expect(Buffer.from(page.term().written.at(-1) as Uint8Array).toString()).toContain("[reconnected: a new shell]");
    // The gateway failing (1011) after the reconnect: reconnected again, the attempts counted afresh.
    page.socket().end(1011);
    page.fireTimers();
    page.socket().open();
    expect(page.states().slice(-2)).toEqual(["connecting", "connected"]);
    // Every attempt refused: five tries with a growing pause, then "disconnected" with Reconnect.
    page.socket().end(1006);
    for (let attempt = 0; attempt < 5; attempt++) {
      page.fireTimers();
      page.socket().end(1006);
    }
    expect(FakeSocket.made).toHaveLength(8);
    expect(page.states().at(-1)).toBe("disconnected");
    expect(page.retry().hidden).toBe(false);
    // A shell that exited (1000), a control revoked or released (1008), a desktop that ended (1001): no reconnect.
    for (const code of [1000, 1008, 1001]) {
      const ended = load("#c=abc");
      ended.socket().open();
      ended.socket().end(code);
      ended.fireTimers();
      expect(ended.states(), String(code)).toEqual(["connecting", "connected", "disconnected"]);
      expect(FakeSocket.made, String(code)).toHaveLength(1);
    }
  });

  it("gives the terminal's text to test drivers", () => {
    const page = load("#c=abc");
    expect(page.text()).toBe("$ ls\na  b\n$");
    page.term().lines = ["old", "$ ls", "a", "$ ", "", ""];
    page.term().viewportY = 1;
    page.term().rows = 3;
    expect(page.text()).toBe("$ ls\na\n$");
    expect(page.text({ all: true })).toBe("old\n$ ls\na\n$");
  });

  it(`fails and offers Reconnect when ${TERMINAL_FAIL_AFTER_MS / 1000} s pass without connecting; Reconnect opens a new shell`, () => {
    const page = load("#c=abc");
    expect(page.retry().hidden).toBe(true);
    page.fireTimers();
    expect(page.states()).toEqual(["connecting", "failed"]);
    expect(page.socket().closedByPage).toBe(true);
    page.retry().click();
    expect(page.states().slice(2)).toEqual(["connecting"]);
    expect(FakeSocket.made).toHaveLength(2);
    expect(FakeTerminal.made).toHaveLength(1);
    expect(page.term().resets).toBe(2);
    page.socket().open();
    expect(page.states().at(-1)).toBe("connected");
  });

  it("fails on a socket refused before it opened, a missing capability, and xterm not loaded", () => {
    const page = load("#c=abc");
    page.socket().end();
    expect(page.states()).toEqual(["connecting", "failed"]);
    expect(load("").states()).toEqual(["connecting", "failed"]);
    expect(load("#c=a/b").states()).toEqual(["connecting", "failed"]);
    // xterm not loaded: the page reloads itself (a request the browser cut) up to three times, then fails.
    const storage = new Map<string, string>();
    for (let attempt = 1; attempt <= 3; attempt++) {
      const reloading = load("#c=abc", { noXterm: true, storage });
      expect(reloading.states()).toEqual(["connecting"]);
      reloading.fireTimers();
      expect(reloading.reloads()).toBe(1);
      expect([...storage.values()]).toEqual([String(attempt)]);
    }
    const bare = load("#c=abc", { noXterm: true, storage });
    expect(bare.states()).toEqual(["connecting", "failed"]);
    expect(bare.reloads()).toBe(0);
    expect(FakeSocket.made).toHaveLength(0);
    expect(bare.text()).toBe("");
    // The count is cleared, by the failure and by a page that loads.
    expect(storage.size).toBe(0);
    storage.set("agent-computer-terminal-reloads:abc", "1");
    load("#c=abc", { storage });
    expect(storage.size).toBe(0);
  });
});
