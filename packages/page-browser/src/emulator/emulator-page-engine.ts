import type { OpContext } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import { Browser, type BrowserPage } from "happy-dom";
import type { CollectedPage } from "../collected-page.js";
import type { PageEngine } from "../page-engine.js";
import { PAGE_SCRIPT } from "../page-script.js";

/** A DOM element of the emulator, opaque to the page session. */
export type EmulatedElement = object;

type PageScript = (command: Record<string, unknown>, target: unknown, win: unknown) => Record<string, unknown>;
const pageScript = new Function(`return ${PAGE_SCRIPT}`)() as PageScript;

/**
 * happy-dom as a `PageEngine`: real HTTP pages (or scripted ones, through
 * `respond`) in an in-process DOM with their scripts running, and no layout,
 * so every rendered element counts as in view and boxes are zero.
 */
export class EmulatorPageEngine implements PageEngine<EmulatedElement> {
  readonly layout = false;
  private readonly browser: Browser;
  private readonly page: BrowserPage;
  private readonly ids = new WeakMap<object, number>();
  private readonly windows = new WeakMap<object, number>();
  private nextId = 1;

  constructor(respond?: (url: string) => { status: number; html: string } | undefined) {
    this.browser = new Browser({
      settings: {
        enableJavaScriptEvaluation: true,
        suppressInsecureJavaScriptEnvironmentWarning: true,
        suppressCodeGenerationFromStringsWarning: true,
        disableIframePageLoading: true,
        navigation: { disableChildPageNavigation: true },
        timer: { maxTimeout: 5000 },
        ...(respond
          ? {
              fetch: {
                interceptor: {
                  beforeAsyncRequest: async ({ request, window }) => {
                    const page = respond(request.url);
                    return new window.Response(page?.html ?? "Not found", {
                      status: page?.status ?? 404,
                      headers: { "content-type": "text/html; charset=utf-8" },
                    });
                  },
                },
              },
            }
          : {}),
      },
    });
    this.page = this.browser.newPage();
  }

  async load(url: string, timeoutMs: number, ctx: OpContext): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AgentComputerError("TIMEOUT", `${url} did not finish loading within ${timeoutMs} ms.`)),
        timeoutMs,
      );
    });
    try {
      ctx.signal?.throwIfAborted();
      const response = await Promise.race([this.page.goto(url, { timeout: timeoutMs }), deadline]);
      if (response && !response.ok && response.status >= 500) {
        // A server error still shows a page, as in a real browser; the snapshot tells the model.
      }
      await Promise.race([this.page.waitUntilComplete(), deadline]);
    } catch (error) {
      if (AgentComputerError.is(error)) throw error;
      throw new AgentComputerError(
        "UNAVAILABLE",
        `Could not load ${url}: ${String((error as Error).message ?? error).slice(0, 200)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async collect(
    command: Record<string, unknown>,
    after?: EmulatedElement,
  ): Promise<{ page: CollectedPage; handles: EmulatedElement[] }> {
    const answer = pageScript(command, after, this.page.mainFrame.window);
    if (answer.error) throw scriptError(answer.error);
    return { page: answer.data as CollectedPage, handles: answer.nodes as EmulatedElement[] };
  }

  async perform(handle: EmulatedElement, command: Record<string, unknown>): Promise<Record<string, unknown>> {
    // No input devices here: the script's own events stand in for the user's, so they count as trusted.
    return pageScript({ ...command, trusted: true }, handle, this.page.mainFrame.window);
  }

  identity(handle: EmulatedElement): number {
    let id = this.ids.get(handle);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(handle, id);
    }
    return id;
  }

  async documentKey(): Promise<string> {
    const win = this.page.mainFrame.window as unknown as object;
    const doc = this.page.mainFrame.document as unknown as object;
    let id = this.windows.get(doc);
    if (id === undefined) {
      id = this.nextId++;
      this.windows.set(doc, id);
    }
    return `${this.identity(win)}:${id}`;
  }

  async settle(): Promise<void> {
    // Lets handlers, short timers and a navigation an action started run to completion.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await this.page.waitUntilComplete();
  }

  async close(): Promise<void> {
    await this.browser.close();
  }
}

function scriptError(error: unknown): AgentComputerError {
  const e = error as { message?: string };
  return new AgentComputerError("UNAVAILABLE", `The page script failed: ${e.message ?? "unknown"}`);
}
