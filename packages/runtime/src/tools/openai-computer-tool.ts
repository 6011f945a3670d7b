import type { ComputerToolSession } from "./computer-tool-session.js";
import {
  type ComputerUseScaling,
  fromOpenAiComputerActions,
  type OpenAiComputerAction,
} from "./computer-use-actions.js";
import { answered, displayScaling, runComputerUseBatch } from "./computer-use-batch.js";
import type { ComputerUseTool } from "./computer-use-tool.js";

/** What OpenAI's computer-use tool hands over: one action (`computer_call.action`), or a batch (`actions`). */
export type OpenAiComputerInput =
  | OpenAiComputerAction
  | readonly OpenAiComputerAction[]
  | { actions: readonly OpenAiComputerAction[] };

/** Options of `openAiComputerTool`. */
export interface OpenAiComputerToolOptions {
  /** The model's screen width (height by the display's aspect ratio); default the display's own size. */
  modelWidth?: number;
}

/**
 * A bot's desktop as OpenAI's computer-use tool: declare `scaling().model`
 * as `display_width` / `display_height`, and hand each `computer_call`'s
 * `action` (or `actions`) to `execute`; a batch runs as one desktop batch.
 */
export function openAiComputerTool(
  session: ComputerToolSession,
  options: OpenAiComputerToolOptions = {},
): ComputerUseTool<OpenAiComputerInput> {
  let scaling: Promise<ComputerUseScaling> | undefined;
  const scalingOnce = () => {
    scaling ??= displayScaling(session, options.modelWidth, undefined).catch((error: unknown) => {
      scaling = undefined;
      throw error;
    });
    return scaling;
  };
  return {
    name: "computer",
    version: "computer",
    scaling: scalingOnce,
    execute: (input) =>
      answered(async () => {
        const scale = await scalingOnce();
        return runComputerUseBatch(session, fromOpenAiComputerActions(input ?? [], scale), scale);
      }),
  };
}
