import { createHash } from "node:crypto";
import type {
  ActionResult,
  ActOutcome,
  DesktopSession,
  Observation,
  PageBrowser,
  ScreenEndpoint,
  TerminalEndpoint,
} from "@agent-computer/core";
import {
  AgentComputerError,
  checkOpContext,
  type DesktopAction,
  desktopActionBatchSchema,
  type OpContext,
  parseInput,
  type ResolvedDesktopAction,
  throwIfDone,
} from "@agent-computer/core";
import { EmulatorPageBrowser } from "@agent-computer/page-browser/emulator";
import { z } from "zod";
import type { FakeGateway } from "./fake-gateway.js";
import { serveRfb } from "./fake-rfb.js";
import { type FakeShellRun, serveShell } from "./fake-shell.js";
import { drawText, glyphAdvance, lineAdvance } from "./pixel-font.js";
import { encodePng } from "./png.js";

/** What the fake screen shows; every visible change alters the frame. */
interface FakeScreenState {
  cursor: { x: number; y: number };
  /** Programs launched on this desktop, newest last; the newest has focus. */
  windows: string[];
  typed: string;
  keys: string[];
  clicks: number;
  scroll: { x: number; y: number };
  /** The page the page browser shows last: its title and text are drawn. */
  page?: { title: string; text: string };
}

export interface FakeDesktopHooks {
  /** Throws when the machine cannot take desktop actions now. */
  assertUsable(): void;
  /** Frees this bot's slot. */
  onRelease(): void;
  /** The provider's gateway, which serves this desktop's screens and terminals. */
  readonly gateway?: FakeGateway;
  /** A terminal's command line, run in the computer in the bot's folder. */
  readonly runLine: FakeShellRun;
}

/**
 * A desktop drawn in memory: a band whose colour encodes what was typed,
 * clicked and scrolled, with the focused window's title on it; below, the
 * page the page browser shows (title and text) and what was typed, in a
 * small pixel font (pixel-font.ts); and a cross at the cursor. Frames are
 * deterministic PNGs, so equal states give equal hashes and a visible
 * action changes it.
 */
export class FakeDesktop implements DesktopSession {
  private readonly state: FakeScreenState = {
    cursor: { x: 0, y: 0 },
    windows: [],
    typed: "",
    keys: [],
    clicks: 0,
    scroll: { x: 0, y: 0 },
  };
  private released = false;
  /** The screen and terminal capabilities granted for this desktop, ended with it. */
  private readonly endpoints = new Set<string>();
  /** The emulator (docs/architecture.md §5): loopback HTTP pages in an in-process DOM, created on first use. */
  private emulator: EmulatorPageBrowser | undefined;

  constructor(
    readonly botId: string,
    readonly display: string,
    private readonly width: number,
    private readonly height: number,
    private readonly hooks: FakeDesktopHooks,
  ) {}

  get pageBrowser(): PageBrowser {
    const browser = () => {
      this.emulator ??= new EmulatorPageBrowser();
      return this.emulator;
    };
    const shown = <T extends { title: string; text: string } | undefined>(snapshot: T): T => {
      if (snapshot) this.state.page = { title: snapshot.title, text: snapshot.text };
      return snapshot;
    };
    return {
      navigate: async (url, ctx) => {
        this.assertUsable(ctx);
        return shown(await browser().navigate(url, ctx));
      },
      snapshot: (ctx, request) => {
        this.assertUsable(ctx);
        return browser().snapshot(ctx, request);
      },
      act: async (action, ctx, after) => {
        this.assertUsable(ctx);
        const outcome = await browser().act(action, ctx, after);
        shown(outcome.snapshot?.delta ? undefined : outcome.snapshot);
        return outcome;
      },
    };
  }

  async observe(ctx?: OpContext, opts: { includeImage?: boolean } = {}): Promise<Observation> {
    this.assertUsable(ctx);
    const png = encodePng(this.width, this.height, this.render());
    return {
      ...(opts.includeImage === false ? {} : { image: png }),
      mimeType: "image/png",
      width: this.width,
      height: this.height,
      cursor: { ...this.state.cursor },
      frameHash: createHash("sha256").update(png).digest("hex"),
      windowTitle: this.state.windows.at(-1) ?? `Fake desktop of ${this.botId}`,
      takenAt: Date.now(),
    };
  }

  async act(actions: DesktopAction[], ctx?: OpContext): Promise<ActOutcome> {
    const batch = parseInput(desktopActionBatchSchema, actions, "DesktopAction batch");
    this.assertUsable(ctx);
    const results: ActionResult[] = [];
    let failed = false;
    for (const [index, action] of batch.entries()) {
      if (failed) {
        results.push({ index, type: action.type, status: "not-run" });
        continue;
      }
      try {
        const image = await this.apply(action);
        results.push({ index, type: action.type, status: "done", ...(image ? { image } : {}) });
      } catch (error) {
        failed = true;
        const e = AgentComputerError.is(error) ? error : new AgentComputerError("UNAVAILABLE", String(error));
        results.push({
          index,
          type: action.type,
          status: "failed",
          uncertain: false,
          error: { code: e.code, message: e.message },
        });
      }
    }
    return { ok: !failed, results };
  }

  /** Opens a "window" titled after the program and its argument: the frame changes. */
  async launch(argv: string[], ctx?: OpContext): Promise<void> {
    const program = parseInput(z.array(z.string().min(1)).min(1), argv, "launch argv");
    this.assertUsable(ctx);
    this.state.windows.push(program.map((part) => part.split("/").at(-1)).join(" "));
  }

  /** A live screen through the provider's loopback gateway: RFB of this fake screen (fake-rfb.ts). */
  async screenEndpoint(mode: "view" | "control", ctx?: OpContext, opts?: { ttlMs?: number }): Promise<ScreenEndpoint> {
    parseInput(z.enum(["view", "control"]), mode, "screen mode");
    this.assertUsable(ctx);
    const gateway = this.gatewayOrRefuse();
    const source = {
      width: this.width,
      height: this.height,
      name: `Fake desktop of ${this.botId}`,
      pixels: () => this.render(),
      input: async (actions: DesktopAction[]) => {
        await this.act(actions);
      },
    };
    const endpoint = await gateway.screen(mode, (socket) => serveRfb(socket, source, mode), opts?.ttlMs);
    this.endpoints.add(endpoint.id);
    return endpoint;
  }

  /** A simulated shell (fake-shell.ts) under a live control capability, or one of its own. */
  async terminalEndpoint(ctx?: OpContext, opts?: { ttlMs?: number; controlId?: string }): Promise<TerminalEndpoint> {
    this.assertUsable(ctx);
    const gateway = this.gatewayOrRefuse();
    if (opts?.controlId !== undefined && !this.endpoints.has(opts.controlId))
      throw new AgentComputerError("NOT_FOUND", `No screen capability ${opts.controlId} on this desktop.`);
    const endpoint = await gateway.terminal(
      (socket) => serveShell(socket, this.hooks.runLine),
      opts?.ttlMs,
      opts?.controlId,
    );
    this.endpoints.add(endpoint.id);
    return endpoint;
  }

  async revokeEndpoint(id: string, _ctx?: OpContext): Promise<void> {
    this.hooks.gateway?.revoke(id);
  }

  async release(_ctx?: OpContext): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.hooks.gateway?.revokeAll((id) => this.endpoints.has(id));
    await this.emulator?.close();
    this.emulator = undefined;
    this.hooks.onRelease();
  }

  private gatewayOrRefuse(): FakeGateway {
    if (this.hooks.gateway) return this.hooks.gateway;
    throw new AgentComputerError(
      "UNSUPPORTED",
      "The fake desktop has no live screen (createFakeProvider({ liveScreens: false })); use a provider with one.",
    );
  }

  private assertUsable(ctx?: OpContext): void {
    throwIfDone(checkOpContext(ctx), "desktop call");
    if (this.released)
      throw new AgentComputerError("CONFLICT", `The desktop of ${this.botId} was released; open it again.`);
    this.hooks.assertUsable();
  }

  private async apply(action: ResolvedDesktopAction): Promise<Uint8Array | undefined> {
    const s = this.state;
    switch (action.type) {
      case "move":
        s.cursor = this.point(action.x, action.y);
        return;
      case "click":
        if (action.x !== undefined || action.y !== undefined) {
          s.cursor = this.point(action.x ?? s.cursor.x, action.y ?? s.cursor.y);
        }
        s.clicks += action.count;
        return;
      case "drag":
        for (const p of action.path) s.cursor = this.point(p.x, p.y);
        s.clicks++;
        return;
      case "scroll":
        if (action.x !== undefined && action.y !== undefined) s.cursor = this.point(action.x, action.y);
        s.scroll = { x: s.scroll.x + action.dx, y: s.scroll.y + action.dy };
        return;
      case "type":
        s.typed += action.text;
        return;
      case "type_secret":
        // The fake desktop's "screen" is no browser: it has no origin to check a secret against.
        throw new AgentComputerError(
          "UNSUPPORTED",
          `The fake desktop has no browser tab to type the secret ${action.secret} into; use browser_act with secret.`,
        );
      case "key":
        s.keys.push(action.keys);
        return;
      case "mouse_down":
      case "mouse_up":
      case "key_down":
      case "key_up":
        return; // held state is not visible
      case "wait":
        await new Promise((resolve) => setTimeout(resolve, action.ms));
        return;
      case "zoom": {
        const { x, y, width, height } = action.region;
        this.point(x + width - 1, y + height - 1);
        return encodePng(width, height, crop(this.render(), this.width, x, y, width, height));
      }
    }
  }

  private drawWords(picture: { rgb: Uint8Array; width: number; height: number }, band: number): void {
    const { title, body } = wordsOf(this.state, this.botId);
    const [r, g, b] = picture.rgb.subarray(0, 3);
    // Black on a light band, white on a dark one (perceived luminance).
    const light = 0.299 * (r as number) + 0.587 * (g as number) + 0.114 * (b as number) > 140;
    const onBand = light ? ([0, 0, 0] as const) : ([255, 255, 255] as const);
    drawText(picture, title, { x: 6, y: Math.max(0, (band - 10) / 2), scale: 2, colour: onBand });
    const perLine = Math.max(1, Math.floor((picture.width - 12) / glyphAdvance(2)));
    const lines = body.flatMap((line) =>
      line.length === 0 ? [""] : (line.match(new RegExp(`.{1,${perLine}}`, "g")) ?? []),
    );
    for (const [index, line] of lines.entries()) {
      const y = band + 8 + index * lineAdvance(2);
      if (y + lineAdvance(2) > picture.height) break;
      drawText(picture, line, { x: 6, y, scale: 2, colour: [40, 40, 40] });
    }
  }

  private point(x: number, y: number): { x: number; y: number } {
    if (x >= this.width || y >= this.height) {
      throw new AgentComputerError(
        "INVALID_ARGUMENT",
        `(${x}, ${y}) is outside the ${this.width}x${this.height} screen.`,
      );
    }
    return { x, y };
  }

  private render(): Uint8Array {
    const { width, height } = this;
    const rgb = new Uint8Array(width * height * 3).fill(0xe8);
    const s = this.state;
    const digest = createHash("sha256")
      .update(JSON.stringify([s.windows, s.typed, s.keys, s.clicks, s.scroll]))
      .digest();
    const band = Math.min(24, height);
    for (let y = 0; y < band; y++) {
      for (let x = 0; x < width; x++)
        rgb.set([digest[0] as number, digest[1] as number, digest[2] as number], (y * width + x) * 3);
    }
    this.drawWords({ rgb, width, height }, band);
    for (let d = -4; d <= 4; d++) {
      paint(rgb, width, height, s.cursor.x + d, s.cursor.y);
      paint(rgb, width, height, s.cursor.x, s.cursor.y + d);
    }
    return rgb;
  }
}

/** What the fake screen says: the title on the band, then the page and the typed text, cut to fit. */
function wordsOf(state: FakeScreenState, botId: string): { title: string; body: string[] } {
  const title = state.windows.at(-1) ?? `Fake desktop of ${botId}`;
  const body: string[] = [];
  if (state.page) body.push(state.page.title, "", ...state.page.text.split("\n"));
  if (state.typed) body.push("", `typed: ${state.typed}`);
  return { title, body };
}

function paint(rgb: Uint8Array, width: number, height: number, x: number, y: number): void {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  rgb.set([0, 0, 0], (y * width + x) * 3);
}

function crop(rgb: Uint8Array, width: number, x: number, y: number, w: number, h: number): Uint8Array {
  const out = new Uint8Array(w * h * 3);
  for (let row = 0; row < h; row++) {
    const start = ((y + row) * width + x) * 3;
    out.set(rgb.subarray(start, start + w * 3), row * w * 3);
  }
  return out;
}
