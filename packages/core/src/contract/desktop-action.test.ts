import { describe, expect, it } from "vitest";
import { parseInput } from "../validation/parse-input.js";
import { desktopActionBatchSchema } from "./desktop-action.js";

describe("desktopActionBatchSchema", () => {
  it("refuses a NUL in typed text and key names, naming the action, and keeps tabs and newlines", () => {
    for (const action of [
      { type: "type", text: "a\u0000b" },
      { type: "key", keys: "ctrl+\u0000" },
      { type: "key_down", key: "\u0000" },
      { type: "key_up", key: "shift\u0000" },
    ]) {
      expect(() => parseInput(desktopActionBatchSchema, [action], "DesktopAction batch"), action.type).toThrow(
        expect.objectContaining({
          code: "INVALID_ARGUMENT",
          message: expect.stringMatching(
            /^Invalid DesktopAction batch: at "0\.(text|keys|key)": must not contain a NUL/,
          ),
        }),
      );
    }
    const typed = parseInput(desktopActionBatchSchema, [{ type: "type", text: "line\n\tnext" }], "DesktopAction batch");
    expect(typed).toEqual([{ type: "type", text: "line\n\tnext" }]);
  });
});
