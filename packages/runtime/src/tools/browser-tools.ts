import type { PageActOutcome, PageBrowser, PageElement, PageSnapshot } from "@agent-computer/core";
import { AgentComputerError, pageActionSchema } from "@agent-computer/core";
import { z } from "zod";
import type { ComputerToolSession } from "./computer-tool-session.js";
import { type ComputerTool, computerTool, recorded, textResult } from "./recorded-call.js";

/** The bot's page browser, or an error that says what to use instead. */
async function pageBrowserOf(session: ComputerToolSession): Promise<PageBrowser> {
  if (!session.capabilities.pageBrowser) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "This computer has no page browser; use computer_observe and computer_act to work with the browser window.",
    );
  }
  const desktop = await session.desktop();
  if (!desktop.pageBrowser) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      "This desktop has no page browser; use computer_observe and computer_act to work with the browser window.",
    );
  }
  return desktop.pageBrowser;
}

/** One element as one line: compact, because the model reads every snapshot. */
function elementLine(e: PageElement): string {
  const parts = [`${e.ref} ${e.role} "${e.name}"`];
  if (e.value !== undefined && e.value !== "") parts.push(`value="${e.value}"`);
  if (e.options) parts.push(`options=[${e.options.join("|")}]`);
  if (e.checked !== undefined) parts.push(e.checked ? "checked" : "unchecked");
  if (e.disabled) parts.push("disabled");
  if (e.expanded !== undefined) parts.push(e.expanded ? "expanded" : "collapsed");
  if (e.focused) parts.push("focused");
  if (!e.inViewport) parts.push("offscreen");
  if (e.unreachable) parts.push(`(${e.unreachable}: use computer_act at its box)`);
  if (e.bbox.width > 0) parts.push(`@${e.bbox.x},${e.bbox.y},${e.bbox.width}x${e.bbox.height}`);
  return parts.join(" ");
}

/** A snapshot as the text a model reads. */
export function renderPageSnapshot(s: PageSnapshot): string {
  const lines = [
    `Page "${s.title}" ${s.url} (snapshot ${s.snapshotId})`,
    s.text + (s.textTruncated ? " [text cut]" : ""),
  ];
  lines.push(`Elements (use their refs with browser_act):`);
  for (const e of s.elements) lines.push(elementLine(e));
  if (s.omittedElements > 0) {
    lines.push(
      `${s.omittedElements} more elements not listed: scroll (scroll_into_view on the last one) or navigate to narrow.`,
    );
  }
  return lines.join("\n");
}

function renderOutcome(action: string, ref: string, outcome: PageActOutcome): string {
  const head = outcome.ok
    ? `${action} on ${ref} done (${outcome.progress.join(", ") || "no visible step"}).`
    : `${action} on ${ref} FAILED: ${outcome.error?.code}: ${outcome.error?.message} Confirmed: ${
        outcome.progress.join(", ") || "nothing"
      }. ${outcome.uncertain ? "The outcome is UNCERTAIN: check the page before doing it again." : "Nothing else happened."}`;
  return outcome.snapshot ? `${head}\n${renderPageSnapshot(outcome.snapshot)}` : head;
}

const browserNavigate = computerTool({
  name: "browser_navigate",
  description:
    "Open a URL in your browser's visible tab (the same logged-in browser you see on your desktop), wait for it to load, and return a text snapshot of the page: its text and up to 80 interactive elements, each with a ref (e1, e2...), role, name, value and state. Cheaper and faster than screenshots for reading and filling web pages.",
  inputSchema: z.object({ url: z.string().min(1).max(8192).describe("An http(s) URL.") }),
  mutating: true,
  handler: (input, session) =>
    recorded(session, "browser_navigate", input.url, async () => {
      const snapshot = await (await pageBrowserOf(session)).navigate(input.url);
      return { result: textResult(renderPageSnapshot(snapshot)), ok: true };
    }),
});

const browserSnapshot = computerTool({
  name: "browser_snapshot",
  description:
    "Read your browser's visible tab as text: page text plus up to 80 interactive elements (visible ones first) with refs for browser_act. Take one before acting and whenever the page may have changed; password values are always masked. Frames and shadow-DOM controls are listed with their box; use computer_act for them.",
  inputSchema: z.object({}),
  mutating: false,
  async handler(_input, session) {
    const snapshot = await (await pageBrowserOf(session)).snapshot();
    return textResult(renderPageSnapshot(snapshot));
  },
});

const browserAct = computerTool({
  name: "browser_act",
  description:
    "Act on one element of your latest browser snapshot by its ref: click, fill (replace text), type (append text), select (an option by label), check/uncheck, press (a key like Enter), hover, scroll_into_view. Returns what was done and a new snapshot. A ref whose element changed is refused (STALE_REF): snapshot again. If it reports an UNCERTAIN outcome, check the page before repeating.",
  inputSchema: pageActionSchema,
  mutating: true,
  handler: (input, session) =>
    // The value is left out of the activity: it may be a password.
    recorded(
      session,
      "browser_act",
      `${input.action} ${input.ref}${input.value !== undefined ? ` (${input.value.length} characters)` : ""}`,
      async () => {
        const outcome = await (await pageBrowserOf(session)).act(input);
        const result = textResult(renderOutcome(input.action, input.ref, outcome));
        return { result: outcome.ok ? result : { ...result, isError: true }, ok: outcome.ok };
      },
    ),
});

/** The page tools (docs/architecture.md §5, §10), offered where the provider has a page browser. */
export function browserTools(session: ComputerToolSession, options: { screenHeld?: boolean } = {}): ComputerTool[] {
  if (!session.capabilities.pageBrowser) return [];
  // Navigating or acting would change a screen a person controls now.
  return options.screenHeld ? [browserSnapshot] : [browserNavigate, browserSnapshot, browserAct];
}
