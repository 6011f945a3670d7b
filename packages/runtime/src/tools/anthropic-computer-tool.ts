import { AgentComputerError } from "@agent-computer/core";
import type { ComputerToolSession } from "./computer-tool-session.js";
import {
  type AnthropicComputerAction,
  type ComputerUseBatch,
  type ComputerUseScaling,
  fromAnthropicComputerAction,
} from "./computer-use-actions.js";
import { answered, displayScaling, runComputerUseBatch } from "./computer-use-batch.js";
import type { ComputerUseTool } from "./computer-use-tool.js";

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

/** Anthropic resizes larger screenshots; a model screen within them keeps its coordinates true. */
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
    scaling ??= displayScaling(session, options.modelWidth, ANTHROPIC_IMAGE_LIMITS).catch((error: unknown) => {
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
        const batch = fromAnthropicComputerAction(input ?? { action: "" }, scale);
        return runComputerUseBatch(session, repeated(batch, input?.repeat, version), scale);
      });
    },
  };
}

/** The toolset's `repeat`: the same actions again, in one batch (at most 20 times, the batch's 100 actions). */
function repeated(batch: ComputerUseBatch, repeat: number | undefined, version: AnthropicComputerToolVersion) {
  if (repeat === undefined) return batch;
  if (version !== "computer_toolset_20260801") {
    throw new AgentComputerError("INVALID_ARGUMENT", `repeat is not an input of ${version}.`);
  }
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 20 || batch.actions.length * repeat > 100) {
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      "repeat must be a whole number from 1 to 20, and the repeated actions at most 100.",
    );
  }
  return { ...batch, actions: Array.from({ length: repeat }, () => batch.actions).flat() };
}
