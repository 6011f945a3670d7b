import { describe, expect, it } from "vitest";
import { InvalidTerminalMessage, terminalFrameOf } from "../computer/desktop/terminal-frames.js";

describe("terminalFrameOf", () => {
  it("frames binary messages as input for the PTY server", () => {
    expect(terminalFrameOf(Buffer.from("ls\r"), true)).toEqual(Buffer.from([0, 0, 0, 0, 3, 0x6c, 0x73, 0x0d]));
    expect(terminalFrameOf(Buffer.alloc(0), true)).toBeUndefined();
  });

  it("turns a resize into a resize frame and ignores other control types", () => {
    const resize = Buffer.from(JSON.stringify({ type: "resize", cols: 132, rows: 43 }));
    expect(terminalFrameOf(resize, false)).toEqual(Buffer.from([1, 0, 0, 0, 4, 0, 132, 0, 43]));
    expect(terminalFrameOf(Buffer.from('{"type":"ping"}'), false)).toBeUndefined();
  });

  it("refuses text that is not a JSON object and resizes out of range", () => {
    for (const text of ["ls", "[1]", "null", '"resize"']) {
      expect(() => terminalFrameOf(Buffer.from(text), false)).toThrow(InvalidTerminalMessage);
    }
    for (const size of [
      { cols: 0, rows: 24 },
      { cols: 80, rows: 1001 },
      { cols: 80.5, rows: 24 },
      { cols: "80", rows: 24 },
    ]) {
      expect(() => terminalFrameOf(Buffer.from(JSON.stringify({ type: "resize", ...size })), false)).toThrow(
        InvalidTerminalMessage,
      );
    }
  });
});
