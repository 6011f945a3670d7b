import type { ComputerUseScaling } from "./computer-use-actions.js";
import type { ToolResult } from "./tool-result.js";

/**
 * A bot's desktop as a vendor's own computer-use tool, as a plain object:
 * the model calls it in the format it was trained on, and each call runs as
 * a `computer_act` batch or a `computer_observe` look on the same tool
 * session (frame de-duplication, the repeated-action guard, activity
 * events), with coordinates and screenshots scaled between the model's
 * screen and the display (docs/architecture.md §10, "The vendors' tools").
 */
export interface ComputerUseTool<Input> {
  /** The tool's name as the vendor's API knows it. */
  readonly name: "computer";
  /** The vendor's tool version this adapter speaks (`computer_20250124`, `computer_20251124`, `computer`). */
  readonly version: string;
  /**
   * The model's screen and the display's, read from the desktop once: what
   * to declare to the vendor (Anthropic's `display_width_px` and
   * `display_height_px`, OpenAI's `display_width` and `display_height`).
   */
  scaling(): Promise<ComputerUseScaling>;
  /** Runs one call; a malformed call or a failed action is an `isError` result the model can read. */
  execute(input: Input, signal?: AbortSignal): Promise<ToolResult>;
}
