/** A part of a tool result: text for every model, images for models with vision. */
export type ToolContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly data: Uint8Array; readonly mimeType: "image/png" | "image/jpeg" }
  /** A file handed to the conversation (attach_file): for the app to show or send. */
  | { readonly type: "file"; readonly name: string; readonly data: Uint8Array; readonly mimeType: string };

/** What a tool hands back to the model. */
export interface ToolResult {
  readonly content: readonly ToolContent[];
  /** The call failed; `content` says why in words a model can act on. */
  readonly isError?: boolean;
}
