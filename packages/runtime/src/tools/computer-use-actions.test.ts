import { desktopActionBatchSchema } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import {
  type AnthropicComputerAction,
  type ComputerUseBatch,
  type ComputerUseScaling,
  fromAnthropicComputerAction,
  fromOpenAiComputerActions,
  type OpenAiComputerAction,
  scalePoint,
  toModelPoint,
} from "./computer-use-actions.js";

// The model sees 1024x768; the display is 1280x800: x scales by 1.25, y by 800/768.
const scaling: ComputerUseScaling = { model: { width: 1024, height: 768 }, display: { width: 1280, height: 800 } };

const anthropic: [string, AnthropicComputerAction, ComputerUseBatch][] = [
  ["key", { action: "key", text: "ctrl+l" }, { actions: [{ type: "key", keys: "ctrl+l" }] }],
  [
    "zoom (computer_20251124: corners on the model's screen)",
    { action: "zoom", region: [100, 96, 200, 192] },
    { actions: [{ type: "zoom", region: { x: 125, y: 100, width: 125, height: 100 } }] },
  ],
  ["type", { action: "type", text: "hello" }, { actions: [{ type: "type", text: "hello" }] }],
  ["mouse_move", { action: "mouse_move", coordinate: [512, 384] }, { actions: [{ type: "move", x: 640, y: 400 }] }],
  [
    "left_click",
    { action: "left_click", coordinate: [100, 96] },
    { actions: [{ type: "click", x: 125, y: 100, button: "left", count: 1 }] },
  ],
  [
    "left_click with modifiers",
    { action: "left_click", coordinate: [100, 96], text: "ctrl+shift" },
    {
      actions: [
        { type: "key_down", key: "ctrl" },
        { type: "key_down", key: "shift" },
        { type: "click", x: 125, y: 100, button: "left", count: 1 },
        { type: "key_up", key: "shift" },
        { type: "key_up", key: "ctrl" },
      ],
    },
  ],
  [
    "left_click_drag",
    { action: "left_click_drag", start_coordinate: [0, 0], coordinate: [1023, 767] },
    {
      actions: [
        {
          type: "drag",
          path: [
            { x: 0, y: 0 },
            { x: 1279, y: 799 },
          ],
        },
      ],
    },
  ],
  [
    "right_click",
    { action: "right_click", coordinate: [8, 8] },
    { actions: [{ type: "click", x: 10, y: 8, button: "right", count: 1 }] },
  ],
  [
    "middle_click",
    { action: "middle_click", coordinate: [8, 8] },
    { actions: [{ type: "click", x: 10, y: 8, button: "middle", count: 1 }] },
  ],
  [
    "double_click",
    { action: "double_click", coordinate: [8, 8] },
    { actions: [{ type: "click", x: 10, y: 8, button: "left", count: 2 }] },
  ],
  [
    "triple_click",
    { action: "triple_click", coordinate: [8, 8] },
    { actions: [{ type: "click", x: 10, y: 8, button: "left", count: 3 }] },
  ],
  [
    "scroll",
    { action: "scroll", coordinate: [512, 384], scroll_direction: "down", scroll_amount: 5 },
    { actions: [{ type: "scroll", x: 640, y: 400, dx: 0, dy: 5 }] },
  ],
  [
    "scroll left",
    { action: "scroll", coordinate: [512, 384], scroll_direction: "left", scroll_amount: 2 },
    { actions: [{ type: "scroll", x: 640, y: 400, dx: -2, dy: 0 }] },
  ],
  ["wait", { action: "wait", duration: 1.5 }, { actions: [{ type: "wait", ms: 1500 }] }],
  ["screenshot", { action: "screenshot" }, { actions: [], answer: "screenshot" }],
  ["cursor_position", { action: "cursor_position" }, { actions: [], answer: "cursor_position" }],
  [
    "hold_key",
    { action: "hold_key", text: "shift", duration: 2 },
    {
      actions: [
        { type: "key_down", key: "shift" },
        { type: "wait", ms: 2000 },
        { type: "key_up", key: "shift" },
      ],
    },
  ],
  [
    "left_mouse_down",
    { action: "left_mouse_down", coordinate: [512, 384] },
    {
      actions: [
        { type: "move", x: 640, y: 400 },
        { type: "mouse_down", button: "left" },
      ],
    },
  ],
  ["left_mouse_up", { action: "left_mouse_up" }, { actions: [{ type: "mouse_up", button: "left" }] }],
];

const openai: [string, OpenAiComputerAction, ComputerUseBatch][] = [
  [
    "click",
    { type: "click", x: 100, y: 96, button: "left" },
    { actions: [{ type: "click", x: 125, y: 100, button: "left" }] },
  ],
  [
    "click wheel",
    { type: "click", x: 100, y: 96, button: "wheel" },
    { actions: [{ type: "click", x: 125, y: 100, button: "middle" }] },
  ],
  [
    "double_click",
    { type: "double_click", x: 100, y: 96 },
    { actions: [{ type: "click", x: 125, y: 100, button: "left", count: 2 }] },
  ],
  [
    "drag",
    {
      type: "drag",
      path: [
        { x: 0, y: 0 },
        { x: 512, y: 384 },
        { x: 1024, y: 768 },
      ],
    },
    {
      actions: [
        {
          type: "drag",
          path: [
            { x: 0, y: 0 },
            { x: 640, y: 400 },
            { x: 1279, y: 799 },
          ],
        },
      ],
    },
  ],
  [
    "keypress",
    { type: "keypress", keys: ["CTRL", "SHIFT", "T"] },
    { actions: [{ type: "key", keys: "ctrl+shift+t" }] },
  ],
  ["keypress enter", { type: "keypress", keys: ["ENTER"] }, { actions: [{ type: "key", keys: "Return" }] }],
  ["move", { type: "move", x: 512, y: 384 }, { actions: [{ type: "move", x: 640, y: 400 }] }],
  ["screenshot", { type: "screenshot" }, { actions: [], answer: "screenshot" }],
  [
    "scroll",
    { type: "scroll", x: 512, y: 384, scroll_x: 0, scroll_y: 300 },
    { actions: [{ type: "scroll", x: 640, y: 400, dx: 0, dy: 3 }] },
  ],
  [
    "scroll small up",
    { type: "scroll", x: 512, y: 384, scroll_x: -20, scroll_y: 0 },
    { actions: [{ type: "scroll", x: 640, y: 400, dx: -1, dy: 0 }] },
  ],
  ["type", { type: "type", text: "hi there" }, { actions: [{ type: "type", text: "hi there" }] }],
  ["wait", { type: "wait" }, { actions: [{ type: "wait", ms: 1000 }] }],
];

describe("computer-use action adapters", () => {
  it.each(anthropic)("maps Anthropic %s with 1024x768 → 1280x800 scaling", (_name, input, expected) => {
    const batch = fromAnthropicComputerAction(input, scaling);
    expect(batch).toEqual(expected);
    if (batch.actions.length > 0) expect(desktopActionBatchSchema.safeParse(batch.actions).success).toBe(true);
  });

  it.each(openai)("maps OpenAI %s with 1024x768 → 1280x800 scaling", (_name, input, expected) => {
    const batch = fromOpenAiComputerActions(input, scaling);
    expect(batch).toEqual(expected);
    if (batch.actions.length > 0) expect(desktopActionBatchSchema.safeParse(batch.actions).success).toBe(true);
  });

  it("maps a batched OpenAI actions[] onto one desktop batch, screenshot after", () => {
    const batch = fromOpenAiComputerActions(
      {
        actions: [{ type: "click", x: 100, y: 96 }, { type: "type", text: "x" }, { type: "screenshot" }],
      },
      scaling,
    );
    expect(batch).toEqual({
      actions: [
        { type: "click", x: 125, y: 100, button: "left" },
        { type: "type", text: "x" },
      ],
      answer: "screenshot",
    });
  });

  it("scales from 1024x768 to 1280x800 and back", () => {
    for (const p of [
      { x: 0, y: 0 },
      { x: 512, y: 384 },
      { x: 1000, y: 700 },
    ]) {
      const display = scalePoint(p, scaling.model, scaling.display);
      expect(toModelPoint(display, scaling)).toEqual(p);
    }
    expect(toModelPoint({ x: 1279, y: 799 }, scaling)).toEqual({ x: 1023, y: 767 });
    expect(fromAnthropicComputerAction({ action: "mouse_move", coordinate: [300, 200] }).actions).toEqual([
      { type: "move", x: 300, y: 200 },
    ]);
  });

  it("rejects unknown actions and bad input with INVALID_ARGUMENT naming the problem", () => {
    expect(() => fromAnthropicComputerAction({ action: "teleport" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining('"teleport"') }),
    );
    expect(() => fromOpenAiComputerActions({ type: "teleport" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining('"teleport"') }),
    );
    expect(() => fromAnthropicComputerAction({ action: "mouse_move" })).toThrow(/coordinates/);
    expect(() => fromAnthropicComputerAction({ action: "scroll", scroll_direction: "sideways" as "up" })).toThrow(
      /scroll_direction/,
    );
    expect(() => fromOpenAiComputerActions({ type: "click", x: 1, y: 1, button: "back" })).toThrow(/back/);
    expect(() => fromOpenAiComputerActions([])).toThrow(/empty/);
  });
});
