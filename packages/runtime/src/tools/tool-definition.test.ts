import { AgentComputerError } from "@agent-computer/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { callTool, defineTool } from "./tool-definition.js";

const echo = defineTool({
  name: "echo",
  description: "Repeats text.",
  inputSchema: z.object({ text: z.string(), times: z.number().int().positive().default(1) }),
  mutating: false,
  async handler(input, context: { prefix: string }) {
    if (input.text === "boom") throw new AgentComputerError("UNAVAILABLE", "The computer is unreachable.");
    if (input.text === "bug") throw new TypeError("a bug");
    return { content: [{ type: "text", text: `${context.prefix}${input.text.repeat(input.times)}` }] };
  },
});

describe("callTool", () => {
  it("validates input, applies defaults and passes the bound context", async () => {
    expect(await callTool(echo, { text: "ab", times: 2 }, { prefix: ">" })).toEqual({
      content: [{ type: "text", text: ">abab" }],
    });
    expect(await callTool(echo, { text: "x" }, { prefix: "" })).toEqual({ content: [{ type: "text", text: "x" }] });
  });

  it("turns bad input and typed failures into error results a model can read", async () => {
    const bad = await callTool(echo, { text: 5 }, { prefix: "" });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^INVALID_ARGUMENT: .*"text"/) });
    const down = await callTool(echo, { text: "boom" }, { prefix: "" });
    expect(down).toEqual({
      isError: true,
      content: [{ type: "text", text: "UNAVAILABLE: The computer is unreachable." }],
      error: { code: "UNAVAILABLE", message: "The computer is unreachable.", retryable: true },
    });
  });

  it("lets programming errors through", async () => {
    await expect(callTool(echo, { text: "bug" }, { prefix: "" })).rejects.toThrow(TypeError);
  });
});
