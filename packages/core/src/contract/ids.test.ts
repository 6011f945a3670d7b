import { describe, expect, it } from "vitest";
import { parseInput } from "../validation/parse-input.js";
import { botIdSchema, computerIdSchema, homeKeySchema, isBotId, isHomeKey, workspaceIdSchema } from "./ids.js";

describe("bot ids", () => {
  // Every bot id the packages' tests use as a valid one, and the longest.
  it.each(["alpha", "bot-1", "b", "conformance-bot", "nss-bot", "Bot_2", "bot.one", "a".repeat(64)])(
    "accepts %j",
    (id) => {
      expect(isBotId(id)).toBe(true);
      expect(parseInput(botIdSchema, id, "bot id")).toBe(id);
      expect(parseInput(workspaceIdSchema, id, "workspace id")).toBe(id);
    },
  );

  it.each(["", ".", "..", "../x", "../bot", "b/c", "-rf", ".hidden", "a b", "a".repeat(65), "é"])(
    "refuses %j",
    (id) => {
      expect(isBotId(id)).toBe(false);
      expect(() => parseInput(botIdSchema, id, "bot id")).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^Invalid bot id/) }),
      );
    },
  );
});

describe("computer ids", () => {
  it("take any 1-256 characters, separators included: the scope is in the record, never in the id", () => {
    for (const id of ["team-ws1", "private-ws1-alpha", "a/b", "desk 42", "x".repeat(256)])
      expect(parseInput(computerIdSchema, id, "computerId")).toBe(id);
    for (const id of ["", "x".repeat(257), 42])
      expect(() => parseInput(computerIdSchema, id, "computerId")).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
  });
});

describe("home keys", () => {
  it("are folder names: letters, digits, . _ -, at most 128, a letter or digit first", () => {
    for (const key of ["team-ws1", "Shape_Key", "home.1", "h".repeat(128)]) expect(isHomeKey(key)).toBe(true);
    for (const key of ["", "..", "../x", "a/b", ".h", "h".repeat(129)]) {
      expect(isHomeKey(key)).toBe(false);
      expect(() => parseInput(homeKeySchema, key, "home key")).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
    }
  });
});
