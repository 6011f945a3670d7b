import {
  AgentComputerError,
  type DesktopSession,
  desktopActionBatchSchema,
  type Observation,
  parseInput,
} from "@agent-computer/core";
import type { ComputerToolSession } from "./computer-tool-session.js";
import {
  type ComputerUseBatch,
  type ComputerUseScaling,
  type ScreenSize,
  toModelPoint,
} from "./computer-use-actions.js";
import { recorded, textResult } from "./recorded-call.js";
import type { ToolContent, ToolResult } from "./tool-result.js";

const VISUAL = new Set([
  "move",
  "click",
  "mouse_down",
  "mouse_up",
  "drag",
  "scroll",
  "type",
  "key",
  "key_down",
  "key_up",
]);

/**
 * How a batch waits for the screen to stop changing before it looks: an
 * app repaints after the input that changed it (a click's page update
 * lands a frame or more later, on a busy machine hundreds of milliseconds
 * later), and a screenshot taken in between shows the model the old
 * screen under the new title. The screen is settled once its frame has
 * not changed for `SETTLE_QUIET_MS`; a screen that never settles (a video)
 * costs the budget, then the model gets it as it is.
 */
const SETTLE_POLL_MS = 100;
const SETTLE_QUIET_MS = 300;
const SETTLE_BUDGET_MS = 2_000;

async function settled(desktop: DesktopSession): Promise<void> {
  const started = Date.now();
  const hash = async () => (await desktop.observe(undefined, { includeImage: false })).frameHash;
  let last = await hash();
  let changedAt = started;
  while (Date.now() - changedAt < SETTLE_QUIET_MS && Date.now() - started < SETTLE_BUDGET_MS) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const next = await hash();
    if (next !== last) {
      last = next;
      changedAt = Date.now();
    }
  }
}

/** A look at the desktop with the image at the model's size (the desktop scales it: `maxWidth`). */
async function observeForModel(
  desktop: DesktopSession,
  scaling: ComputerUseScaling | undefined,
  includeImage = true,
): Promise<Observation> {
  if (!scaling || scaling.model.width === scaling.display.width || !includeImage) {
    return desktop.observe(undefined, { includeImage });
  }
  const frame = (await desktop.observe(undefined, { maxWidth: scaling.model.width } as {
    includeImage?: boolean;
  })) as Observation & { imageSize?: ScreenSize };
  if (frame.image && frame.imageSize?.width !== scaling.model.width) {
    throw new AgentComputerError(
      "UNSUPPORTED",
      `This desktop cannot scale screenshots to the model's ${scaling.model.width}x${scaling.model.height}: use a model screen of the display's size (${scaling.display.width}x${scaling.display.height}).`,
    );
  }
  return frame;
}

/**
 * Frame metadata in the model's coordinates (the display's without
 * scaling), and the image only when this session has not seen that frame
 * yet: the session's one frame de-duplication (docs/architecture.md §10).
 */
export function frameForModel(
  session: ComputerToolSession,
  frame: Observation,
  scaling?: ComputerUseScaling,
): ToolContent[] {
  const cursor = toModelPoint(frame.cursor, scaling);
  const screen = scaling?.model ?? frame;
  const meta = `Screen ${screen.width}x${screen.height}, cursor at (${cursor.x}, ${cursor.y})${
    frame.windowTitle ? `, active window "${frame.windowTitle}"` : ""
  }, frame ${frame.frameHash.slice(0, 12)}.`;
  if (frame.frameHash === session.lastFrameHash) {
    return [{ type: "text", text: `${meta} Unchanged since your last screenshot: that screenshot still holds.` }];
  }
  session.lastFrameHash = frame.frameHash;
  return frame.image
    ? [
        { type: "text", text: meta },
        { type: "image", data: frame.image, mimeType: frame.mimeType },
      ]
    : [{ type: "text", text: meta }];
}

const REFUSED_REPEAT =
  "Refused: you repeated exactly the same action, and last time it changed nothing on the screen. Do something different: another place or key, keyboard navigation, or take a screenshot to look again.";

/**
 * Runs a desktop batch for a model: `computer_act`'s batches, and a vendor
 * action mapped onto one. Its guard refuses an identical visual batch that
 * changed nothing last time (with `refusal`, what to do instead); it is a
 * `computer_act` activity event; the screen after comes back in the
 * model's coordinates, its image only if this session has not seen it.
 * A batch of no actions is a look (`answer`), as `computer_observe`.
 */
export async function runComputerUseBatch(
  session: ComputerToolSession,
  batch: ComputerUseBatch,
  scaling: ComputerUseScaling | undefined,
  refusal = REFUSED_REPEAT,
): Promise<ToolResult> {
  if (batch.actions.length === 0) {
    const desktop = await session.desktop();
    if (batch.answer === "cursor_position") {
      const { cursor } = await desktop.observe(undefined, { includeImage: false });
      const at = toModelPoint(cursor, scaling);
      return textResult(`The cursor is at X=${at.x}, Y=${at.y}.`);
    }
    return { content: frameForModel(session, await observeForModel(desktop, scaling), scaling) };
  }
  // The vendors' adapters map a model's free text onto the batch (a NUL in
  // it, issue 45): refused here, before the desktop is asked anything and
  // before the activity event, as callTool refuses computer_act's input.
  parseInput(desktopActionBatchSchema, batch.actions, "desktop batch");
  const key = JSON.stringify(batch.actions);
  const visual = batch.actions.some((a) => VISUAL.has(a.type));
  if (visual && session.lastAct?.key === key && !session.lastAct.changed) {
    return { isError: true, content: [{ type: "text", text: refusal }] };
  }
  const summary = `desktop: ${batch.actions.map((a) => a.type).join(", ")}`;
  return recorded(session, "computer_act", summary, async () => {
    // Inside the record: a desktop that cannot start is a failed call in the activity too.
    const desktop = await session.desktop();
    const before = session.lastFrameHash ?? (await desktop.observe(undefined, { includeImage: false })).frameHash;
    // A secret the batch names is resolved here and goes to the desktop only (never into the summary or result).
    const names = [...new Set(batch.actions.flatMap((a) => (a.type === "type_secret" ? [a.secret] : [])))];
    const secrets = await Promise.all(names.map((name) => session.secretText(name)));
    const outcome = await desktop.act(batch.actions, undefined, secrets.length > 0 ? { secrets } : {});
    if (visual) await settled(desktop);
    const after = await observeForModel(desktop, scaling);
    session.lastAct = { key, changed: after.frameHash !== before };
    const failed = outcome.results.find((r) => r.status === "failed");
    const lines = [
      outcome.ok
        ? `All ${outcome.results.length} action(s) done.`
        : `Action ${failed?.index} (${failed?.type}) failed: ${failed?.error?.message}${
            failed?.uncertain ? " It may have taken effect: look before retrying." : ""
          } Actions after it did not run.`,
      session.lastAct.changed ? "The screen changed." : "The screen did not change.",
    ];
    const zooms: ToolContent[] = outcome.results.flatMap((r) =>
      r.image ? [{ type: "image" as const, data: r.image, mimeType: "image/png" as const }] : [],
    );
    return {
      result: {
        ...(outcome.ok ? {} : { isError: true }),
        content: [{ type: "text", text: lines.join(" ") }, ...zooms, ...frameForModel(session, after, scaling)],
      },
      ok: outcome.ok,
    };
  });
}

/**
 * The model's screen for a display: `width` if given (the height follows
 * the display's aspect ratio), else the display scaled down until it fits
 * `limits` (never up).
 */
export function modelScreenFor(
  display: ScreenSize,
  options: { width?: number; limits?: { longEdge: number; pixels: number } },
): ScreenSize {
  const factor = options.width
    ? options.width / display.width
    : Math.min(
        1,
        options.limits ? options.limits.longEdge / Math.max(display.width, display.height) : 1,
        options.limits ? Math.sqrt(options.limits.pixels / (display.width * display.height)) : 1,
      );
  if (!(factor > 0) || factor > 1) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The model's screen must be at most the display's width (${display.width}), got ${options.width}.`,
    );
  }
  return { width: Math.round(display.width * factor), height: Math.round(display.height * factor) };
}

/** The display's size (one look, no image) and the model's screen for it. */
export async function displayScaling(
  session: ComputerToolSession,
  modelWidth: number | undefined,
  limits: { longEdge: number; pixels: number } | undefined,
): Promise<ComputerUseScaling> {
  const desktop = await session.desktop();
  const { width, height } = await desktop.observe(undefined, { includeImage: false });
  const display = { width, height };
  return {
    display,
    model: modelScreenFor(display, { ...(modelWidth ? { width: modelWidth } : {}), ...(limits ? { limits } : {}) }),
  };
}

/** Errors a model can act on as an `isError` result with the code in the text, as `callTool` gives them. */
export async function answered(work: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await work();
  } catch (error) {
    if (!AgentComputerError.is(error)) throw error;
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}` }] };
  }
}
