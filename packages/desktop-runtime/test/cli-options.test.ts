import { describe, expect, it } from "vitest";
import { integerOption, parseCliOptions } from "../computer/desktop/cli-options.js";

describe("the desktop command's flags", () => {
  it("keeps a value that starts with -- when it comes as --name=value", () => {
    // A capability id is 16 random bytes in base64url: 1 in 4,096 starts with "--".
    const opts = parseCliOptions(["--id=--AbCdEfGhIjKlMnOpQr", "--eval=a=b"], "usage");
    expect(opts.get("id")).toBe("--AbCdEfGhIjKlMnOpQr");
    expect(opts.get("eval")).toBe("a=b");
  });

  it("reads spaced values and bare flags as before", () => {
    const opts = parseCliOptions(["--bot", "b1", "--no-image", "--width", "800"], "usage");
    expect([...opts]).toEqual([
      ["bot", "b1"],
      ["no-image", "true"],
      ["width", "800"],
    ]);
  });

  it("refuses a stray argument with INVALID_ARGUMENT", () => {
    expect(() => parseCliOptions(["b1"], "usage")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("reads an integer option strictly: the screen limit from the environment is checked like the flag", () => {
    expect(integerOption(undefined, "--screen-limit", 0, 0, 1000)).toBe(0);
    expect(integerOption("3", "--screen-limit", 0, 0, 1000)).toBe(3);
    for (const bad of ["abc", "-5", "2.5", "", " ", "1001", "1e9"]) {
      expect(() => integerOption(bad, "SANDBOX_TEAM_SCREEN_LIMIT", 0, 0, 1000), bad).toThrow(
        /SANDBOX_TEAM_SCREEN_LIMIT must be an integer from 0 to 1000/,
      );
    }
  });
});
