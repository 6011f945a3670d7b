import { describe, expect, it } from "vitest";
import { AgentComputerError } from "./agent-computer-error.js";
import { ERROR_CODES, RETRYABLE_BY_DEFAULT } from "./error-code.js";

describe("AgentComputerError", () => {
  it("carries every code of the design with a retryable default", () => {
    expect(ERROR_CODES).toHaveLength(18);
    for (const code of ERROR_CODES) expect(typeof RETRYABLE_BY_DEFAULT[code]).toBe("boolean");
    expect(RETRYABLE_BY_DEFAULT.PERMISSION_DENIED).toBe(false);
    expect(new AgentComputerError("UNAVAILABLE", "x").retryable).toBe(true);
    expect(new AgentComputerError("INVALID_ARGUMENT", "x").retryable).toBe(false);
    expect(new AgentComputerError("INVALID_ARGUMENT", "x", { retryable: true }).retryable).toBe(true);
  });

  it("matches codes with is() and serialises without stack or cause", () => {
    const cause = new Error("secret-token-123 in a low-level message");
    const error = new AgentComputerError("NOT_FOUND", "No such file.", { cause });
    expect(AgentComputerError.is(error)).toBe(true);
    expect(AgentComputerError.is(error, "NOT_FOUND", "CONFLICT")).toBe(true);
    expect(AgentComputerError.is(error, "CONFLICT")).toBe(false);
    expect(AgentComputerError.is(new Error("x"))).toBe(false);
    expect(JSON.stringify(error)).toBe('{"code":"NOT_FOUND","message":"No such file.","retryable":false}');
    expect(error.cause).toBe(cause);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("AgentComputerError");
  });

  it("checks a subclass by its prototype: another AgentComputerError is not an instance of it", () => {
    class Narrower extends AgentComputerError {}
    const plain = new AgentComputerError("UNAVAILABLE", "x");
    const narrow = new Narrower("UNAVAILABLE", "y");
    expect(plain instanceof Narrower).toBe(false);
    expect(narrow instanceof Narrower).toBe(true);
    expect(narrow instanceof AgentComputerError).toBe(true);
  });
});
