import type { PageActOutcome, PageBrowser, PageElement, PageSnapshot } from "@agent-computer/core";
import { AgentComputerError, pageActionSchema } from "@agent-computer/core";
import { z } from "zod";
import type { ComputerToolSession } from "./computer-tool-session.js";
import { type ComputerTool, computerTool, recorded, textResult } from "./recorded-call.js";

/**
 * What to do where the page tools cannot: a model with vision works the
 * window itself (computer_observe, computer_act); one without has no
 * screen tools, so it asks a person (request_takeover).
 */
function fallback(vision: boolean): { work: string; at: (box: PageElement["bbox"]) => string } {
  return vision
    ? {
        work: "use computer_observe and computer_act to work with the browser window",
        at: (b) => `computer_act at ${b.x},${b.y} ${b.width}x${b.height}`,
      }
    : {
        work: "you cannot see the screen: call request_takeover and say what a person should do there",
        at: () => "request_takeover: a person can reach it",
      };
}

/** The bot's page browser, or an error that says what to use instead. */
async function pageBrowserOf(session: ComputerToolSession): Promise<PageBrowser> {
  const instead = fallback(session.vision).work;
  if (!session.capabilities.pageBrowser) {
    throw new AgentComputerError("UNSUPPORTED", `This computer has no page browser; ${instead}.`);
  }
  const desktop = await session.desktop();
  if (!desktop.pageBrowser) {
    throw new AgentComputerError("UNSUPPORTED", `This desktop has no page browser; ${instead}.`);
  }
  return desktop.pageBrowser;
}

/** One element as the model reads it in place: ref, role, name and only the states it has. */
function elementText(e: PageElement, vision: boolean): string {
  const after: string[] = [];
  // A select's value is marked among its options rather than written twice.
  const chosen = e.options && e.value ? e.options.indexOf(e.value) : -1;
  if (e.value !== undefined && e.value !== "" && chosen < 0) after.push(`value="${e.value}"`);
  if (e.options) after.push(`options=[${e.options.map((o, i) => (i === chosen ? `${o} (selected)` : o)).join("|")}]`);
  // Unchecked is a box's default, as in the accessibility tree: only "checked" is written.
  if (e.checked) after.push("checked");
  if (e.disabled) after.push("disabled");
  if (e.expanded !== undefined) after.push(e.expanded ? "expanded" : "collapsed");
  if (e.pressed) after.push("pressed");
  if (e.selected) after.push("selected");
  if (e.focused) after.push("focused");
  // Boxes cost ~9 tokens each; only the desktop fallback needs one.
  if (e.unreachable) after.push(`(${e.unreachable}: ${fallback(vision).at(e.bbox)})`);
  const name = e.name ? [nameText(e.name, after.length > 0)] : [];
  return `[${[e.ref, e.role, ...name, ...after].join(" ")}]`;
}

// Words a bracket can end with after the name: a name ending in one is quoted, so it is never read as a state.
const STATE_WORD = /(^|\s)(checked|disabled|expanded|collapsed|pressed|selected|focused)$/;

/**
 * The name as written in its bracket: bare when it ends the bracket (the
 * role is one word before it and "]" closes it), quoted when states follow
 * or it could be misread. The quotes cost a token per element, about a
 * tenth of a snapshot of links and buttons (`npm run bench -- page-browser`).
 */
function nameText(name: string, statesFollow: boolean): string {
  return statesFollow || /["[\]]/.test(name) || STATE_WORD.test(name) ? `"${name}"` : name;
}

/**
 * The page text with no spaces between two elements that follow each other
 * on a line: `[e3 button Settings][e4 button Help]`. Their brackets already
 * part them, and "] [" costs a token more than "][" in the tokenizers models
 * read (o200k_base): 30 tokens, 3 %, of the page-browser bench's inbox, whose
 * rows and toolbars put elements side by side (`npm run bench -- page-browser`).
 * Text beside an element keeps its space, so the page's words read as they were.
 */
function sideBySide(text: string, byRef: ReadonlyMap<string, PageElement>): string {
  return text.replace(/\[(e\d+)\] +(?=\[(e\d+)\])/g, (spaced, ref: string, next: string) =>
    byRef.has(ref) && byRef.has(next) ? `[${ref}]` : spaced,
  );
}

function continuationHint(s: PageSnapshot): string | undefined {
  const c = s.continuation;
  if (!c) return undefined;
  const args = JSON.stringify({
    ...(c.after ? { after: c.after } : {}),
    ...(c.textFrom ? { text_from: c.textFrom } : {}),
  });
  return `[cut: ${c.moreElements} more elements, ${c.moreText} more characters; read on with browser_snapshot ${args}]`;
}

/**
 * A snapshot as the text a model reads: the page text in document order
 * with each element in its place (docs/architecture.md §5), or for a delta
 * only the new text lines and the added or changed elements. `vision`:
 * whether the model has screen tools, for what an unreachable element says.
 */
export function renderPageSnapshot(s: PageSnapshot, vision = true): string {
  const placed = new Set<string>();
  const byRef = new Map(s.elements.map((e) => [e.ref, e]));
  const body = sideBySide(s.text, byRef).replace(/\[(e\d+)\]/g, (marker, ref: string) => {
    const e = byRef.get(ref);
    if (!e) return marker;
    placed.add(ref);
    return elementText(e, vision);
  });
  const rest = s.elements.filter((e) => !placed.has(e.ref)).map((e) => elementText(e, vision));
  const d = s.delta;
  const head = d
    ? `Page "${s.title}" ${s.url} (snapshot ${s.snapshotId}: only changes since ${d.since}; ${d.unchanged} unchanged elements keep their refs${
        d.removed.length ? `; gone: ${d.removed.join(" ")}` : ""
      }${d.textUnchanged ? "; text unchanged" : "; new text lines below"})`
    : `Page "${s.title}" ${s.url}`;
  return [head, body, ...rest, continuationHint(s)].filter((line) => line).join("\n");
}

function renderOutcome(action: string, ref: string, outcome: PageActOutcome, vision: boolean): string {
  const head = outcome.ok
    ? `${action} on ${ref} done (${outcome.progress.join(", ") || "no visible step"}).`
    : `${action} on ${ref} FAILED: ${outcome.error?.code}: ${outcome.error?.message} Confirmed: ${
        outcome.progress.join(", ") || "nothing"
      }. ${outcome.uncertain ? "The outcome is UNCERTAIN: check the page before doing it again." : "Nothing else happened."}${
        // Without screen tools a failure the page tools cannot get past needs a person.
        vision ? "" : ` If the page tools cannot do it, ${fallback(false).work}.`
      }`;
  return outcome.snapshot ? `${head}\n${renderPageSnapshot(outcome.snapshot, vision)}` : head;
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
      return { result: textResult(session.maskTypedSecrets(renderPageSnapshot(snapshot, session.vision))), ok: true };
    }),
});

const browserSnapshot = computerTool({
  name: "browser_snapshot",
  description:
    'Read your browser\'s visible tab as text in page order, each interactive element in place as [ref role name] or [ref role "name" states] for browser_act (up to 80 per snapshot). changes_only: true answers only what changed since your last snapshot (unchanged refs still hold); a cut snapshot ends with the exact call that reads on. Password values are always masked. Frames and shadow-DOM controls come with their box and what reaches them.',
  inputSchema: z.object({
    changes_only: z
      .boolean()
      .optional()
      .describe("Only what changed since your last snapshot of this page (after an action): fewer tokens."),
    after: z
      .string()
      .regex(/^e[1-9][0-9]{0,5}$/)
      .optional()
      .describe("Read on after this ref, as a cut snapshot tells you."),
    text_from: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("With after: skip this many characters, as a cut snapshot tells you."),
  }),
  mutating: false,
  async handler(input, session) {
    const snapshot = await (await pageBrowserOf(session)).snapshot(
      {},
      {
        delta: input.changes_only === true,
        ...(input.after !== undefined ? { after: input.after } : {}),
        ...(input.text_from !== undefined ? { textFrom: input.text_from } : {}),
      },
    );
    return textResult(session.maskTypedSecrets(renderPageSnapshot(snapshot, session.vision)));
  },
});

const browserAct = computerTool({
  name: "browser_act",
  description:
    "Act on one element of your latest browser snapshot by its ref: click, fill (replace text), type (append text), select (an option by label), check/uncheck, press (a key like Enter), hover, scroll_into_view. Returns what was done and a new snapshot. A ref whose element changed is refused (STALE_REF): snapshot again. If it reports an UNCERTAIN outcome, check the page before repeating.",
  inputSchema: pageActionSchema,
  mutating: true,
  handler: (input, session) =>
    // The value is left out of the activity: it may be a password. A secret is named, never resolved here.
    recorded(session, "browser_act", actSummary(input), async () => {
      const secretText = input.secret === undefined ? undefined : await session.secretText(input.secret);
      const outcome = await (await pageBrowserOf(session)).act(input, undefined, secretText ? { secretText } : {});
      const result = textResult(
        session.maskTypedSecrets(renderOutcome(input.action, input.ref, outcome, session.vision)),
      );
      return { result: outcome.ok ? result : { ...result, isError: true }, ok: outcome.ok };
    }),
});

function actSummary(input: { action: string; ref: string; value?: string | undefined; secret?: string | undefined }) {
  if (input.secret !== undefined) return `${input.action} ${input.ref} (the secret ${input.secret})`;
  return `${input.action} ${input.ref}${input.value !== undefined ? ` (${input.value.length} characters)` : ""}`;
}

/** The page tools (docs/architecture.md §5, §10), offered where the provider has a page browser. */
export function browserTools(session: ComputerToolSession, options: { screenHeld?: boolean } = {}): ComputerTool[] {
  if (!session.capabilities.pageBrowser) return [];
  // Navigating or acting would change a screen a person controls now.
  return options.screenHeld ? [browserSnapshot] : [browserNavigate, browserSnapshot, browserAct];
}
