import {
  AiSdkToolCallError,
  type AiSdkToolOutput,
  anthropicComputerTool,
  type ComputerToolSession,
  type ComputerUseTool,
  openAiComputerTool,
  toAiSdkModelOutput,
  toAiSdkOutput,
} from "@agent-computer/runtime";
import { anthropic } from "@ai-sdk/anthropic";
import { jsonSchema, type ToolSet, tool } from "ai";

/** A vendor adapter's call as AI SDK tool output; a refused or failed call throws, so the app sees a `tool-error`. */
function executeWith<Input>(computer: ComputerUseTool<Input>) {
  return async (input: Input, options?: { abortSignal?: AbortSignal }): Promise<AiSdkToolOutput> => {
    const output = toAiSdkOutput(await computer.execute(input, options?.abortSignal));
    if (output.isError) throw new AiSdkToolCallError(output);
    return output;
  };
}

const toModelOutput = ({ output }: { output: unknown }) => toAiSdkModelOutput(output as AiSdkToolOutput);

/**
 * The bot's desktop as Anthropic's own `computer` tool (the AI SDK's
 * provider-defined `computer_20251124`, zoom on), declared at the model's
 * screen size; Claude's calls run as desktop batches on `session`.
 */
export async function anthropicComputerToolSet(
  session: ComputerToolSession,
  options: { modelWidth?: number } = {},
): Promise<ToolSet> {
  const computer = anthropicComputerTool(session, { version: "computer_20251124", ...options });
  const { model } = await computer.scaling();
  return {
    computer: anthropic.tools.computer_20251124({
      displayWidthPx: model.width,
      displayHeightPx: model.height,
      enableZoom: true,
      execute: executeWith(computer),
      toModelOutput,
    }),
  };
}

const point = { type: "integer", minimum: 0 };
const action = {
  type: "object",
  properties: {
    type: {
      type: "string",
      enum: ["click", "double_click", "drag", "keypress", "move", "scroll", "type", "wait", "screenshot"],
    },
    x: point,
    y: point,
    button: { type: "string", enum: ["left", "right", "wheel"] },
    path: {
      type: "array",
      items: { type: "object", properties: { x: point, y: point }, required: ["x", "y"], additionalProperties: false },
    },
    keys: { type: "array", items: { type: "string" } },
    scroll_x: { type: "integer" },
    scroll_y: { type: "integer" },
    text: { type: "string" },
    ms: { type: "integer", minimum: 0, maximum: 60_000 },
  },
  required: ["type"],
  additionalProperties: false,
};

/**
 * The bot's desktop in OpenAI's computer-use action format. `@ai-sdk/openai`
 * 3.0.139 has no provider-defined computer tool (its Responses model reads a
 * `computer_call` as provider-executed, with no input to run), so this is a
 * function tool named `computer` whose input is OpenAI's batch
 * `{ actions: [...] }`, executed the same way as the Anthropic tool.
 */
export async function openAiComputerToolSet(
  session: ComputerToolSession,
  options: { modelWidth?: number } = {},
): Promise<ToolSet> {
  const computer = openAiComputerTool(session, options);
  const { model } = await computer.scaling();
  return {
    computer: tool({
      description: `Your computer's screen (${model.width}x${model.height} pixels), in OpenAI's computer-use actions: a batch of click, double_click, drag, keypress, move, scroll, type, wait and screenshot, run in order; returns the screen after.`,
      inputSchema: jsonSchema<{ actions: Parameters<typeof computer.execute>[0] }>({
        type: "object",
        properties: { actions: { type: "array", minItems: 1, items: action } },
        required: ["actions"],
        additionalProperties: false,
      }),
      execute: executeWith(computer) as (input: unknown) => Promise<AiSdkToolOutput>,
      toModelOutput,
    }),
  };
}
