import { expect } from "vitest";

/** A desktop as the display-container suites hold it: keys typed on its display, and its bot's first tab read. */
interface PolicyPageDesktop {
  act(actions: readonly unknown[]): Promise<{ ok: boolean }>;
  evaluateInPage(expression: string): Promise<unknown>;
}

/** One set policy as chrome://policy shows it. */
export interface AppliedChromiumPolicy {
  /** As the page prints it: a string as is, anything else as JSON. */
  readonly value: string;
  /** "OK" when Chromium knows the policy and took its value. */
  readonly status: string;
}

// Every text node of the page, shadow roots included, in document order.
const PAGE_TEXT = `(() => {
  const out = [];
  const walk = (node) => {
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) {
      if (child.nodeType === 3) { const text = child.textContent.trim(); if (text) out.push(text); }
      else walk(child);
    }
  };
  walk(document);
  return [location.href, ...out];
})()`;

/**
 * Chromium's own account of the policies it applies (chrome://policy,
 * opened from the address bar as a person would): each set policy with its
 * value and status, so a suite can tell that a managed policy is not only
 * written but known to Chromium and in force. A name Chromium does not know
 * shows a status other than "OK".
 */
export async function appliedChromiumPolicies(desktop: PolicyPageDesktop): Promise<Map<string, AppliedChromiumPolicy>> {
  // A first page, so the bot's browser is up before keys reach its address bar.
  await desktop.evaluateInPage("1");
  const opened = await desktop.act([
    { type: "key", keys: "ctrl+l" },
    { type: "type", text: "chrome://policy" },
    { type: "key", keys: "Return" },
    { type: "wait", ms: 2000 },
  ]);
  if (!opened.ok) throw new Error("could not open chrome://policy in the bot's browser");
  const [href, ...tokens] = (await desktop.evaluateInPage(PAGE_TEXT)) as string[];
  if (!href?.startsWith("chrome://policy")) throw new Error(`the bot's tab shows ${href}, not chrome://policy`);
  // A set policy's row: name, value, source, scope, level, status; unset ones say "Not set.".
  const applied = new Map<string, AppliedChromiumPolicy>();
  for (let i = 0; i + 5 < tokens.length; i++) {
    const [name = "", value = "", source, , level, status = ""] = tokens.slice(i, i + 6);
    if (source === "Platform" && (level === "Mandatory" || level === "Recommended") && /^[A-Z]\w+$/.test(name))
      if (!applied.has(name)) applied.set(name, { value, status });
  }
  return applied;
}

/**
 * Expects Chromium on the bot's display to apply every policy of `policy`
 * with its value: status "OK", or "Deprecated" (still applied) for the
 * names in `mayBeDeprecated`. Resolves to all the policies it applies.
 */
export async function expectChromiumApplies(
  desktop: PolicyPageDesktop,
  policy: Readonly<Record<string, unknown>>,
  mayBeDeprecated: readonly string[] = [],
): Promise<Map<string, AppliedChromiumPolicy>> {
  const applied = await appliedChromiumPolicies(desktop);
  const expected = Object.entries(policy).map(([name, value]) => [
    name,
    {
      value: typeof value === "string" ? value : JSON.stringify(value),
      status: mayBeDeprecated.includes(name) ? expect.stringMatching(/^(OK|Deprecated)$/) : "OK",
    },
  ]);
  expect(Object.fromEntries(Object.keys(policy).map((name) => [name, applied.get(name)]))).toEqual(
    Object.fromEntries(expected),
  );
  return applied;
}
