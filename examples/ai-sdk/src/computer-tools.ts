import type { ProviderCapabilities } from "@agent-computer/core";
import {
  type ActivityEvent,
  type BotRun,
  ComputerToolSession,
  computerTools,
  toAiSdkTools,
} from "@agent-computer/runtime";
import { jsonSchema, type ToolSet } from "ai";

/** The agent tools of one (computer, bot) as an AI SDK `ToolSet`, for `generateText({ tools })`. */
export function createComputerToolSet(options: {
  run: BotRun;
  capabilities: ProviderCapabilities;
  vision?: boolean;
  onActivity?: (event: ActivityEvent) => void;
  /** The model given to generateText: its specification decides how images are sent. */
  model?: string | { readonly specificationVersion?: string };
}): ToolSet {
  const session = new ComputerToolSession({
    run: options.run,
    capabilities: options.capabilities,
    vision: options.vision ?? true,
    onActivity: options.onActivity,
  });
  return toAiSdkTools(computerTools(session), session, jsonSchema, { model: options.model }) satisfies ToolSet;
}
