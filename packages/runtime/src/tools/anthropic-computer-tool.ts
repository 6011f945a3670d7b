import { AgentComputerError } from "@agent-computer/core";
import type { ComputerToolSession } from "./computer-tool-session.js";
import {
  type AnthropicComputerAction,
  type ComputerUseScaling,
  fromAnthropicComputerAction,
} from "./computer-use-actions.js";
import { modelScreenFor, runComputerUseBatch } from "./computer-use-batch.js";
import type { ComputerUseTool } from "./computer-use-tool.js";
import type { ToolResult } from "./tool-result.js";

/** The versions of Anthropic's computer tool this adapter speaks; the toolset's members take the same input. */
export type AnthropicComputerToolVersion = "computer_20250124" | "computer_20251124" | "computer_toolset_20260801";

/** Options of `anthropicComputerTool`. */
export interface AnthropicComputerToolOptions {
  /** Default `computer_20251124` (adds zoom); `computer_20250124` refuses zoom as that version does. */
  version?: AnthropicComputerToolVersion;
  /**
   * The model's screen width; the height follows the display's aspect
   * ratio. Default: the display scaled down to Anthropic's image limits
   * (1568 px on the long edge, 1.15 megapixels), so the API does not
   * resize screenshots behind the coordinates' back.
   */
  modelWidth?: number;
}

const ANTHROPIC_IMAGE_LIMITS = { longEdge: 1568, pixels: 1_150_000 };

/**
 * A bot's desktop as Anthropic's `computer` tool: pass `scaling().model` as
 * `display_width_px` / `display_height_px` (the AI SDK's
 * `anthropic.tools.computer_20251124({ displayWidthPx, displayHeightPx, execute })`)
 * and hand each `tool_use` input to `execute`.
 */
export function anthropicComputerTool(
  session: ComputerToolSession,
  options: AnthropicComputerToolOptions = {},
): ComputerUseTool<AnthropicComputerAction> {
  const version = options.version ?? "computer_20251124";
  let scaling: Promise<ComputerUseScaling> | undefined;
  const scalingOnce = () => {
    scaling ??= displayScaling(session, options.modelWidth).catch((error: unknown) => {
      scaling = undefined;
      throw error;
    });
    return scaling;
  };
  return {
    name: "computer",
    version,
    scaling: scalingOnce,
    async execute(input) {
      return answered(async () => {
        if (version === "computer_20250124" && input?.action === "zoom") {
          throw new AgentComputerError("INVALID_ARGUMENT", "zoom is not an action of computer_20250124.");
        }
        const scale = await scalingOnce();
        return runComputerUseBatch(session, fromAnthropicComputerAction(input ?? { action: "" }, scale), scale);
      });
    },
  };
}

/** The display's size (one look, no image) and the model's screen for it. */
export async function displayScaling(
  session: ComputerToolSession,
  modelWidth: number | undefined,
  limits: { longEdge: number; pixels: number } | undefined = ANTHROPIC_IMAGE_LIMITS,
): Promise<ComputerUseScaling> {
  const desktop = await session.desktop();
  const { width, height } = await desktop.observe(undefined, { includeImage: false });
  const display = { width, height };
  return {
    display,
    model: modelScreenFor(display, { ...(modelWidth ? { width: modelWidth } : {}), ...(limits ? { limits } : {}) }),
  };
}

/** Errors a model can act on as an `isError` result with the code in the text, as `callTool` gives them. */
export async function answered(work: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await work();
  } catch (error) {
    if (!AgentComputerError.is(error)) throw error;
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}` }] };
  }
}
