import { CdpConnection, cdpJson } from "./cdp-connection.js";
import { CliError } from "./cli-error.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";

/** A vault secret the host resolved for one batch (core's `PageSecretText`). */
export interface BatchSecret {
  readonly name: string;
  readonly value: string;
  readonly origins: readonly string[];
}

/**
 * `desktop act`'s input: a batch, or `{ actions, secrets }` when it types a
 * secret. Anything else in a secret is dropped; a malformed one is no secret.
 */
export function secretsOfBatch(input: unknown): { actions: unknown; secrets: BatchSecret[] } {
  if (Array.isArray(input) || typeof input !== "object" || input === null) return { actions: input, secrets: [] };
  const { actions, secrets } = input as { actions?: unknown; secrets?: unknown };
  const list = Array.isArray(secrets) ? secrets : [];
  return {
    actions,
    secrets: list.flatMap((s: Partial<BatchSecret>) =>
      typeof s?.name === "string" && typeof s.value === "string" && Array.isArray(s.origins)
        ? [{ name: s.name, value: s.value, origins: s.origins.map(String) }]
        : [],
    ),
  };
}

// Read in a world of our own, whose prototypes the page cannot have changed.
const FOCUS_PROBE = `(() => {
  const el = document.activeElement;
  const tag = el ? el.tagName.toLowerCase() : "";
  const field = tag === "input" && String(el.type).toLowerCase() === "password";
  return JSON.stringify({ focused: document.hasFocus(), origin: location.origin, href: location.href, field, frame: tag === "iframe" || tag === "frame" });
})()`;

interface FocusProbe {
  focused: boolean;
  origin: string;
  href: string;
  field: boolean;
  frame: boolean;
}

/**
 * Types `secret` into the focused field of the bot's browser (issue 53,
 * the desktop batch): the tab that has focus, read from a script world
 * of our own, must be on one of the secret's origins with a password
 * field focused (any other field shows the value on the screen); then each character goes as DevTools' trusted
 * input to that tab, and typing stops if its address changes. Nothing of
 * the value is written to a line, a log or an argument.
 */
export async function typeSecretIntoFocusedTab(record: DisplaySlotRecord, secret: BatchSecret): Promise<void> {
  const targets = await cdpJson<{ type: string; webSocketDebuggerUrl?: string }[]>(record, "/json/list").catch(() => {
    throw new CliError("UNAVAILABLE", `The browser of ${record.bot} does not answer; is its desktop quiesced?`);
  });
  for (const target of targets) {
    if (target.type !== "page" || !target.webSocketDebuggerUrl) continue;
    const cdp = await CdpConnection.open(target.webSocketDebuggerUrl, record);
    try {
      const world = await ownWorld(cdp);
      const probe = await probeFocus(cdp, world);
      if (!probe.focused) continue;
      refuseUnlessSafe(secret, probe);
      await typeChecked(cdp, world, secret, probe.href);
      return;
    } finally {
      cdp.close();
    }
  }
  throw new CliError(
    "CONFLICT",
    `No tab of ${record.bot}'s browser has focus: click the field first, then type the secret ${secret.name}.`,
  );
}

function refuseUnlessSafe(secret: BatchSecret, probe: FocusProbe): void {
  if (!secret.origins.includes(probe.origin)) {
    throw new CliError(
      "PERMISSION_DENIED",
      `The secret ${secret.name} may be typed only on ${secret.origins.join(", ")}; the focused tab is on ${probe.origin}. Nothing was typed.`,
    );
  }
  if (probe.frame || !probe.field) {
    throw new CliError(
      "CONFLICT",
      `The focused element of the tab on ${probe.origin} is ${probe.frame ? "a frame" : "not a password field"}: a secret is typed only into a password field, which the screen masks. Click one, then type the secret ${secret.name}. Nothing was typed.`,
    );
  }
}

async function typeChecked(cdp: CdpConnection, world: number, secret: BatchSecret, href: string): Promise<void> {
  for (const char of Array.from(secret.value)) {
    // A navigation destroys the world: that too means the tab left its page.
    const now = await probeFocus(cdp, world).catch(() => undefined);
    if (!now || now.href !== href || !now.field || now.frame) {
      throw new CliError(
        "CONFLICT",
        `The tab left its page or field while the secret ${secret.name} was typed; part of it may have been typed.`,
        true,
      );
    }
    await cdp.call("Input.insertText", { text: char });
  }
}

/** A script world of our own in the tab's main frame. */
async function ownWorld(cdp: CdpConnection): Promise<number> {
  const tree = (await cdp.call("Page.getFrameTree")) as { frameTree: { frame: { id: string } } };
  const world = (await cdp.call("Page.createIsolatedWorld", {
    frameId: tree.frameTree.frame.id,
    worldName: "agent-computer-secret",
  })) as { executionContextId: number };
  return world.executionContextId;
}

async function probeFocus(cdp: CdpConnection, world: number): Promise<FocusProbe> {
  const answer = (await cdp.call("Runtime.evaluate", {
    expression: FOCUS_PROBE,
    contextId: world,
    returnByValue: true,
  })) as { result?: { value?: unknown }; exceptionDetails?: unknown };
  if (answer.exceptionDetails) throw new CliError("UNAVAILABLE", "The tab's focus could not be read.");
  return JSON.parse(String(answer.result?.value ?? "{}")) as FocusProbe;
}
