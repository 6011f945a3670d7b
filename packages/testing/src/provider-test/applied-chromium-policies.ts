import { expect } from "vitest";

/** A desktop as the display-container suites hold it: its bot's first tab, navigated and read. */
interface PolicyPageDesktop {
  evaluateInPage(expression: string | undefined, ctx?: undefined, opts?: { url?: string }): Promise<unknown>;
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
 * Chromium's own account of the policies it applies (chrome://policy in
 * the bot's first tab): each set policy with its value and status, so a
 * suite can tell that a managed policy is not only written but known to
 * Chromium and in force. A name Chromium does not know shows a status
 * other than "OK". The page fills its table after it loads, so it is read
 * until two reads show the same set policies (10 s at most).
 */
export async function appliedChromiumPolicies(desktop: PolicyPageDesktop): Promise<Map<string, AppliedChromiumPolicy>> {
  // Through DevTools on the first tab, which is the tab read: typed into the address bar, the
  // Kubernetes suite's first tab read chrome-error://chromewebdata/ once (clean-clone run 44).
  await desktop.evaluateInPage(undefined, undefined, { url: "chrome://policy" });
  let href = "";
  let last = 0;
  for (let tries = 0; tries < 20; tries++) {
    const [first = "", ...tokens] = (await desktop.evaluateInPage(PAGE_TEXT)) as string[];
    href = first;
    const applied = setPolicies(tokens);
    // Two reads alike: the table is whole.
    if (href.startsWith("chrome://policy") && applied.size > 0 && applied.size === last) return applied;
    last = applied.size;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the bot's first tab shows ${href} with no set policy, not chrome://policy's table`);
}

/** A set policy's row: name, value, source, scope, level, status; unset ones say "Not set.". */
function setPolicies(tokens: readonly string[]): Map<string, AppliedChromiumPolicy> {
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
