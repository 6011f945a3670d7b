import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentComputerError } from "../errors/agent-computer-error.js";
import { parseInput } from "./parse-input.js";

describe("parseInput", () => {
  const schema = z.object({ machine: z.object({ ports: z.array(z.number()) }) });

  it("returns the parsed value", () => {
    expect(parseInput(schema, { machine: { ports: [1] } }, "Thing")).toEqual({ machine: { ports: [1] } });
  });

  it("throws INVALID_ARGUMENT naming the path into the value", () => {
    let caught: unknown;
    try {
      parseInput(schema, { machine: { ports: [1, "two"] } }, "Thing");
    } catch (error) {
      caught = error;
    }
    expect(AgentComputerError.is(caught, "INVALID_ARGUMENT")).toBe(true);
    expect((caught as Error).message).toMatch(/^Invalid Thing: at "machine\.ports\.1": /);
  });

  it("names the root for a wrong top-level type", () => {
    expect(() => parseInput(schema, "nope", "Thing")).toThrow(/at "\(root\)"/);
  });
});
