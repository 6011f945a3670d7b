import type { ErrorCode } from "@agent-computer/core";

/** A part of a tool result: text for every model, images for models with vision. */
export type ToolContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly data: Uint8Array; readonly mimeType: "image/png" | "image/jpeg" | "image/webp" }
  /** A file handed to the conversation (attach_file): for the app to show or send. */
  | { readonly type: "file"; readonly name: string; readonly data: Uint8Array; readonly mimeType: string };

/**
 * Why a tool call failed, for programs: an error code of core
 * (`AgentComputerError`), or COMMAND_FAILED for a shell command that ran
 * and exited non-zero (only with `failedCommandIsError`).
 */
export interface ToolError {
  readonly code: ErrorCode | "COMMAND_FAILED";
  readonly message: string;
  /** Whether the same call may succeed later with nothing else changed. */
  readonly retryable: boolean;
}

/** What a tool hands back to the model. */
export interface ToolResult {
  readonly content: readonly ToolContent[];
  /** The call failed; `content` says why in words a model can act on. */
  readonly isError?: boolean;
  /** With `isError`: the failure as data (adapters that have structured results carry it). */
  readonly error?: ToolError;
}
