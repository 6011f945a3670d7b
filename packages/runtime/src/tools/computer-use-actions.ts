import type { DesktopAction } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";

/** A screen size in pixels. */
export interface ScreenSize {
  readonly width: number;
  readonly height: number;
}

/**
 * The model's screen (the size its screenshots were scaled to) and the
 * display's. Coordinates from the model are scaled to the display; a
 * position read back (cursor_position) is scaled to the model with `toModelPoint`.
 */
export interface ComputerUseScaling {
  readonly model: ScreenSize;
  readonly display: ScreenSize;
}

/**
 * A vendor action as a desktop batch: run `actions` (possibly none) with
 * `DesktopSession.act`, then give the model what `answer` asks for: a screenshot, the cursor
 * position (scaled back to the model), or nothing beyond the outcome.
 */
export interface ComputerUseBatch {
  readonly actions: DesktopAction[];
  readonly answer?: "screenshot" | "cursor_position";
}

function scaleAxis(value: number, from: number, to: number): number {
  return Math.min(to - 1, Math.max(0, Math.round((value * to) / from)));
}

/** A point scaled from one screen to another, clamped onto it. */
export function scalePoint(
  point: { x: number; y: number },
  from: ScreenSize,
  to: ScreenSize,
): { x: number; y: number } {
  return { x: scaleAxis(point.x, from.width, to.width), y: scaleAxis(point.y, from.height, to.height) };
}

/** A display point (e.g. the cursor) as the model's coordinates. */
export function toModelPoint(point: { x: number; y: number }, scaling?: ComputerUseScaling) {
  return scaling ? scalePoint(point, scaling.display, scaling.model) : point;
}

function invalid(message: string): never {
  throw new AgentComputerError("INVALID_ARGUMENT", message);
}

function displayPoint(x: unknown, y: unknown, scaling: ComputerUseScaling | undefined, what: string) {
  if (typeof x !== "number" || typeof y !== "number" || !Number.isFinite(x) || !Number.isFinite(y) || x < 0 || y < 0) {
    invalid(`${what} needs non-negative x and y coordinates.`);
  }
  return scaling ? scalePoint({ x, y }, scaling.model, scaling.display) : { x: Math.round(x), y: Math.round(y) };
}

// ---- Anthropic computer_20250124, computer_20251124 (zoom), computer toolset 20260801 ----

/** The input of Anthropic's `computer_20250124` and `computer_20251124` tools (and the toolset's members). */
export interface AnthropicComputerAction {
  action: string;
  coordinate?: [number, number];
  start_coordinate?: [number, number];
  /** zoom (computer_20251124): [x1, y1, x2, y2], the region's corners on the model's screen. */
  region?: [number, number, number, number];
  text?: string;
  scroll_direction?: "up" | "down" | "left" | "right";
  scroll_amount?: number;
  /** Seconds (wait, hold_key). */
  duration?: number;
  /** The 2026 toolset's: run the action this many times (the tool adapter repeats the batch). */
  repeat?: number;
}

/** Anthropic's zoom corners [x1, y1, x2, y2] on the model's screen as a display region. */
function zoomRegion(region: unknown, scaling: ComputerUseScaling | undefined) {
  if (!Array.isArray(region) || region.length !== 4) invalid("zoom needs region [x1, y1, x2, y2].");
  const [x1, y1, x2, y2] = region as number[];
  const from = displayPoint(x1, y1, scaling, "zoom region");
  const to = displayPoint(x2, y2, scaling, "zoom region");
  if (to.x <= from.x || to.y <= from.y) invalid("zoom region needs x2 > x1 and y2 > y1.");
  return { x: from.x, y: from.y, width: to.x - from.x, height: to.y - from.y };
}

/** Keys held while clicking or scrolling (Anthropic's `text` on click/scroll: "shift", "ctrl+alt"). */
function withModifiers(modifiers: string | undefined, actions: DesktopAction[]): DesktopAction[] {
  const keys = modifiers ? modifiers.split("+").filter(Boolean) : [];
  return [
    ...keys.map((key): DesktopAction => ({ type: "key_down", key })),
    ...actions,
    ...[...keys].reverse().map((key): DesktopAction => ({ type: "key_up", key })),
  ];
}

function seconds(value: unknown, what: string): number {
  if (typeof value !== "number" || !(value >= 0) || value > 60) invalid(`${what} needs a duration of 0 to 60 seconds.`);
  return Math.round(value * 1000);
}

function requireText(input: AnthropicComputerAction): string {
  if (typeof input.text !== "string" || input.text.length === 0) invalid(`Action ${input.action} needs text.`);
  return input.text;
}

/** Maps one Anthropic computer-use action (computer_20250124) onto a desktop batch. */
export function fromAnthropicComputerAction(
  input: AnthropicComputerAction,
  scaling?: ComputerUseScaling,
): ComputerUseBatch {
  const at = (c: [number, number] | undefined, what = `Action ${input.action}`) =>
    displayPoint(c?.[0], c?.[1], scaling, what);
  const maybeAt = () => (input.coordinate ? at(input.coordinate) : {});
  const click = (button: "left" | "right" | "middle", count = 1): ComputerUseBatch => ({
    actions: withModifiers(input.text, [{ type: "click", ...maybeAt(), button, count }]),
  });
  switch (input.action) {
    case "key":
      return { actions: [{ type: "key", keys: requireText(input) }] };
    case "type":
      return { actions: [{ type: "type", text: requireText(input) }] };
    case "mouse_move":
      return { actions: [{ type: "move", ...at(input.coordinate) }] };
    case "left_click":
      return click("left");
    case "right_click":
      return click("right");
    case "middle_click":
      return click("middle");
    case "double_click":
      return click("left", 2);
    case "triple_click":
      return click("left", 3);
    case "left_click_drag":
      return {
        actions: [
          {
            type: "drag",
            path: [at(input.start_coordinate, "left_click_drag start_coordinate"), at(input.coordinate)],
          },
        ],
      };
    case "left_mouse_down":
      return {
        actions: [
          ...(input.coordinate ? [{ type: "move" as const, ...at(input.coordinate) }] : []),
          { type: "mouse_down", button: "left" },
        ],
      };
    case "left_mouse_up":
      return {
        actions: [
          ...(input.coordinate ? [{ type: "move" as const, ...at(input.coordinate) }] : []),
          { type: "mouse_up", button: "left" },
        ],
      };
    case "scroll": {
      const amount = input.scroll_amount ?? 3;
      if (!Number.isInteger(amount) || amount < 0) invalid("scroll_amount must be a non-negative integer.");
      const deltas: Record<string, [number, number]> = {
        up: [0, -amount],
        down: [0, amount],
        left: [-amount, 0],
        right: [amount, 0],
      };
      const delta = deltas[input.scroll_direction ?? ""];
      if (!delta) invalid(`scroll_direction must be up, down, left or right, not "${input.scroll_direction}".`);
      const [dx, dy] = delta as [number, number];
      return { actions: withModifiers(input.text, [{ type: "scroll", ...maybeAt(), dx, dy }]) };
    }
    case "wait":
      return { actions: [{ type: "wait", ms: seconds(input.duration ?? 1, "wait") }] };
    case "hold_key": {
      const key = requireText(input);
      return {
        actions: [
          { type: "key_down", key },
          { type: "wait", ms: seconds(input.duration, "hold_key") },
          { type: "key_up", key },
        ],
      };
    }
    case "zoom":
      return { actions: [{ type: "zoom", region: zoomRegion(input.region, scaling) }] };
    case "screenshot":
      return { actions: [], answer: "screenshot" };
    case "cursor_position":
      return { actions: [], answer: "cursor_position" };
    default:
      return invalid(`Unknown Anthropic computer action "${input.action}".`);
  }
}

// ---- OpenAI computer use ----

/** One OpenAI computer-use action (`computer_call.action`, or an entry of `actions`). */
export interface OpenAiComputerAction {
  type: string;
  x?: number;
  y?: number;
  button?: string;
  path?: { x: number; y: number }[];
  keys?: string[];
  scroll_x?: number;
  scroll_y?: number;
  text?: string;
  /** Milliseconds, where given; OpenAI's wait carries none (default 1000). */
  ms?: number;
}

/** OpenAI key names (as in keypress `keys`) as xdotool keysyms. */
const OPENAI_KEYS: Record<string, string> = {
  CTRL: "ctrl",
  CONTROL: "ctrl",
  ALT: "alt",
  OPTION: "alt",
  SHIFT: "shift",
  CMD: "super",
  META: "super",
  SUPER: "super",
  WIN: "super",
  ENTER: "Return",
  RETURN: "Return",
  ESC: "Escape",
  ESCAPE: "Escape",
  SPACE: "space",
  TAB: "Tab",
  BACKSPACE: "BackSpace",
  DELETE: "Delete",
  HOME: "Home",
  END: "End",
  PAGEUP: "Page_Up",
  PAGEDOWN: "Page_Down",
  UP: "Up",
  DOWN: "Down",
  LEFT: "Left",
  RIGHT: "Right",
  ARROWUP: "Up",
  ARROWDOWN: "Down",
  ARROWLEFT: "Left",
  ARROWRIGHT: "Right",
  INSERT: "Insert",
  CAPSLOCK: "Caps_Lock",
};

function openAiKey(key: string): string {
  const upper = key.toUpperCase();
  if (OPENAI_KEYS[upper]) return OPENAI_KEYS[upper];
  if (/^F([1-9]|1[0-9]|2[0-4])$/.test(upper)) return upper;
  return key.length === 1 ? key.toLowerCase() : key;
}

/** OpenAI scrolls in pixels; the desktop in wheel clicks (about 100 px each, at least one). */
const PIXELS_PER_WHEEL_CLICK = 100;
function wheelClicks(pixels: number | undefined): number {
  if (!pixels) return 0;
  return Math.sign(pixels) * Math.max(1, Math.round(Math.abs(pixels) / PIXELS_PER_WHEEL_CLICK));
}

const OPENAI_BUTTONS: Record<string, "left" | "right" | "middle"> = { left: "left", right: "right", wheel: "middle" };

function fromOpenAiAction(action: OpenAiComputerAction, scaling: ComputerUseScaling | undefined): ComputerUseBatch {
  const at = () => displayPoint(action.x, action.y, scaling, `Action ${action.type}`);
  switch (action.type) {
    case "click": {
      const button = OPENAI_BUTTONS[action.button ?? "left"];
      if (!button) invalid(`click button "${action.button}" is not supported: use left, right or wheel.`);
      return { actions: [{ type: "click", ...at(), button }] };
    }
    case "double_click":
      return { actions: [{ type: "click", ...at(), button: "left", count: 2 }] };
    case "drag": {
      if (!Array.isArray(action.path) || action.path.length < 2) invalid("drag needs a path of at least two points.");
      return {
        actions: [{ type: "drag", path: action.path.map((p) => displayPoint(p?.x, p?.y, scaling, "drag path")) }],
      };
    }
    case "keypress": {
      if (!Array.isArray(action.keys) || action.keys.length === 0) invalid("keypress needs keys.");
      return { actions: [{ type: "key", keys: action.keys.map(openAiKey).join("+") }] };
    }
    case "move":
      return { actions: [{ type: "move", ...at() }] };
    case "scroll":
      return {
        actions: [
          {
            type: "scroll",
            ...(action.x === undefined && action.y === undefined ? {} : at()),
            dx: wheelClicks(action.scroll_x),
            dy: wheelClicks(action.scroll_y),
          },
        ],
      };
    case "type":
      if (typeof action.text !== "string" || action.text.length === 0) invalid("type needs text.");
      return { actions: [{ type: "type", text: action.text }] };
    case "wait":
      return { actions: [{ type: "wait", ms: action.ms ?? 1000 }] };
    case "screenshot":
      return { actions: [], answer: "screenshot" };
    default:
      return invalid(`Unknown OpenAI computer action "${action.type}".`);
  }
}

/**
 * Maps an OpenAI computer-use action, or a batch (`{ actions: [...] }` or an
 * array), onto one desktop batch. A screenshot anywhere asks for one after.
 */
export function fromOpenAiComputerActions(
  input: OpenAiComputerAction | readonly OpenAiComputerAction[] | { actions: readonly OpenAiComputerAction[] },
  scaling?: ComputerUseScaling,
): ComputerUseBatch {
  const list: readonly OpenAiComputerAction[] = Array.isArray(input)
    ? input
    : "actions" in input && Array.isArray(input.actions)
      ? input.actions
      : [input as OpenAiComputerAction];
  if (list.length === 0) invalid("The batch of OpenAI computer actions is empty.");
  const batches = list.map((action) => fromOpenAiAction(action, scaling));
  return {
    actions: batches.flatMap((b) => b.actions),
    ...(batches.some((b) => b.answer === "screenshot") ? { answer: "screenshot" as const } : {}),
  };
}
