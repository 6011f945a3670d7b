import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { LocalAgentHomeStore } from "@agent-computer/checkpoint";
import type { Logger, SandboxProvider, ScreenEndpoint, TerminalEndpoint } from "@agent-computer/core";
import { MemoryStateStore } from "@agent-computer/leases";
import { type ComputerRuntime, createComputerRuntime } from "@agent-computer/runtime";
import { createScreens, runtimeScreenAuthority, type ScreenAuthority, type ScreenEvent } from "@agent-computer/screens";
import type Docker from "dockerode";
import type { Browser, Frame, Page } from "playwright-core";
import { removeComputer as removeTestComputer } from "../support/remove-computer.js";

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];

/**
 * An app as a user would write one: a runtime on real Docker computers, the
 * screens proxy mounted in its HTTP server, and one page (`/app`) that frames
 * viewers and terminals and records the states they post, per frame id.
 */
export interface ScreensApp {
  readonly runtime: ComputerRuntime;
  readonly screens: ReturnType<typeof createScreens>;
  readonly origin: string;
  /** Frame id → src of the `/app` page's iframes. */
  readonly frames: Map<string, string>;
  readonly events: ScreenEvent[];
  readonly logLines: string[];
  /** What the gateway handed out, kept only to prove none of it reaches a log. */
  readonly endpoints: (ScreenEndpoint | TerminalEndpoint)[];
  close(): Promise<void>;
}

export async function startScreensApp(provider: SandboxProvider, dataDir: string): Promise<ScreensApp> {
  const runtime = createComputerRuntime({
    provider,
    stateStore: new MemoryStateStore(),
    homeStore: new LocalAgentHomeStore({ dataDir }),
    idleMs: 0,
  });
  const logLines: string[] = [];
  const events: ScreenEvent[] = [];
  const endpoints: (ScreenEndpoint | TerminalEndpoint)[] = [];
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void logLines.push(JSON.stringify({ level, message, fields }));
  const logger: Logger = { debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
  const base = runtimeScreenAuthority(runtime);
  const authority: ScreenAuthority = {
    ...base,
    open: async (request) => {
      const grant = await base.open(request);
      endpoints.push(grant.endpoint);
      return grant;
    },
    openTerminal: async (request) => {
      const grant = await (base.openTerminal as NonNullable<ScreenAuthority["openTerminal"]>)(request);
      endpoints.push(grant.endpoint);
      return grant;
    },
  };
  const screens = createScreens({
    authority,
    secret: new Uint8Array(32).fill(7),
    logger,
    onEvent: (event) => void events.push(event),
  });
  const frames = new Map<string, string>();
  const server = createServer((req, res) => {
    if (screens.handleRequest(req, res)) return;
    if (req.url !== "/app") return void res.writeHead(404).end();
    const iframes = [...frames].map(
      ([name, src]) => `<iframe id="${name}" src="${src}" style="width:640px;height:400px;border:0"></iframe>`,
    );
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(`<!doctype html><body>${iframes.join("")}<script>
window.states = {};
addEventListener("message", (e) => {
  for (const frame of document.querySelectorAll("iframe"))
    if (frame.contentWindow === e.source) (window.states[frame.id] ??= []).push(e.data.state);
});</script>`);
  });
  server.on("upgrade", (req, socket, head) => {
    if (!screens.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    runtime,
    screens,
    origin,
    frames,
    events,
    logLines,
    endpoints,
    async close() {
      await screens.close();
      server.close();
    },
  };
}

/** Removes the app's computer and (on Docker) its container, whatever state a failed test left it in. */
export function removeComputer(app: ScreensApp, env: { docker?: Docker }, computerId: string): Promise<void> {
  return removeTestComputer(app.runtime, env.docker, computerId);
}

/** Waits until the `/app` page's frame `frame` last reported `state`. */
export async function waitForState(
  page: Page,
  frame: string,
  state: string,
  timeoutMs = 30_000,
  events: readonly ScreenEvent[] = [],
): Promise<void> {
  try {
    await page.waitForFunction(
      ([name, wanted]) =>
        ((window as unknown as { states: Record<string, string[]> }).states[name as string] ?? []).at(-1) === wanted,
      [frame, state],
      { timeout: Math.max(timeoutMs, 1), polling: 50 },
    );
  } catch (error) {
    // Say what the frame went through, so a failure shows where it stuck.
    const seen = await page
      .evaluate((name) => (window as unknown as { states: Record<string, string[]> }).states[name] ?? [], frame)
      .catch(() => ["(page gone)"]);
    const proxySaid = events.slice(-12).map(({ type, at: _at, ...rest }) => `${type} ${JSON.stringify(rest)}`);
    throw new Error(
      `frame ${frame} never reached ${state}; its states: ${seen.join(" → ") || "none"}; what it loaded:\n${await loadsOf(page, frame)}\ntrouble: ${(pageTrouble.get(page) ?? ["(not watched)"]).join("\n")}\nthe proxy's last events:\n${proxySaid.join("\n")}`,
      { cause: error },
    );
  }
}

/** Requests a page's frames could not complete, and their console errors, per page (`watchPage`). */
const pageTrouble = new WeakMap<Page, string[]>();

/** Records the page's failed requests and console errors, for `waitForState` to report. */
export function watchPage(page: Page): Page {
  const trouble: string[] = [];
  pageTrouble.set(page, trouble);
  page.on("requestfailed", (request) =>
    trouble.push(`request failed: ${new URL(request.url()).pathname} ${request.failure()?.errorText ?? ""}`),
  );
  page.on("console", (message) => {
    if (message.type() === "error") trouble.push(`console: ${message.text().slice(0, 300)}`);
  });
  return page;
}

/** The frame's resource loads (path, status, start and duration in ms), to tell a slow load from a failed one. */
async function loadsOf(page: Page, frame: string): Promise<string> {
  const content = await (await page.$(`#${frame}`))?.contentFrame();
  if (!content) return "(no frame)";
  const loads = await content
    .evaluate(() =>
      performance
        .getEntriesByType("resource")
        .map((e) => {
          const r = e as PerformanceResourceTiming;
          return `${new URL(r.name).pathname.slice(-40)} ${r.responseStatus} @${Math.round(r.startTime)} +${Math.round(r.duration)}`;
        })
        .join("\n"),
    )
    .catch((error: Error) => `(unreadable: ${error.message})`);
  return loads || "(nothing)";
}

/** Every secret a log line or event must never hold. */
export function secretsOf(app: ScreensApp, extra: string[]): string[] {
  return [...extra, ...app.endpoints.flatMap((e) => [e.token, e.url, new URL(e.url).host])];
}

/** One browser tab of the `/app` page with its terminal frame connected. */
export interface TerminalTab {
  readonly page: Page;
  readonly frame: Frame;
}

/** Opens the `/app` page in a new tab and waits for its `terminal` frame to connect. */
export async function openTerminalTab(browser: Browser, origin: string): Promise<TerminalTab> {
  const page = watchPage(await browser.newPage({ viewport: { width: 900, height: 600 } }));
  await page.goto(`${origin}/app`);
  await waitForState(page, "terminal", "connected");
  const frame = (await (await page.$("#terminal"))?.contentFrame()) as Frame;
  return { page, frame };
}

/** Types a line into the tab's terminal, as a person would. */
export async function typeLine(tab: TerminalTab, line: string): Promise<void> {
  await tab.page.locator("#terminal").click();
  await tab.page.keyboard.type(line);
  await tab.page.keyboard.press("Enter");
}

/** Whether the terminal page shows `text` (a function, not a string: the page's CSP refuses eval). */
export const terminalHasText = (text: string) =>
  (globalThis as unknown as { terminalText(options?: { all: boolean }): string })
    .terminalText({ all: true })
    .includes(text);
