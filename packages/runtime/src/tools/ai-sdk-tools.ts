import type { z } from "zod";
import { jsonSchemaOf, textOf } from "./tool-adapters.js";
import { callTool, type ToolDefinition } from "./tool-definition.js";
import type { ToolError, ToolResult } from "./tool-result.js";

/**
 * What a tool's `execute` hands back to the AI SDK: JSON-safe (images and
 * files as base64), so it survives in the SDK's messages. `toModelOutput`
 * turns it into what the model reads.
 */
export interface AiSdkToolOutput {
  content: ({ type: "text"; text: string } | { type: "image"; data: string; mimeType: string })[];
  /** Files handed to the conversation (attach_file), for the app; not sent to the model. */
  files: { name: string; mimeType: string; data: string }[];
  isError?: boolean;
  /** With `isError`: the failure as data (its code, message, whether a retry may help), for the app. */
  error?: ToolError;
}

/**
 * The AI SDK's `ToolResultOutput` for the parts this adapter produces. An
 * image is `image-data` for models of the current specification (v3, `ai`
 * 6) and `media` for those of the previous one (v2, `ai` 5, which knows no
 * `image-data`); `ai` 6 still takes `media` and turns it into `image-data`
 * (mapToolResultOutput in its dist/index.mjs).
 */
export type AiSdkModelOutput =
  | { type: "error-text"; value: string }
  | {
      type: "content";
      value: (
        | { type: "text"; text: string }
        | { type: "image-data"; data: string; mediaType: string }
        | { type: "media"; data: string; mediaType: string }
      )[];
    };

/** How to talk to the model: pass the model given to `generateText`, or its specification version. */
export interface AiSdkToolsOptions {
  /**
   * The model (its `specificationVersion` is read; a model id string is
   * the current specification) or the version itself. Default "v3".
   */
  model?: string | { readonly specificationVersion?: string };
}

/**
 * A tool as the `ai` package's `tools` option takes it (`ai` 6), built as a
 * plain object so core imports no AI SDK package. `inputSchema` is whatever
 * the `jsonSchema` function given to `toAiSdkTools` returns (pass the `ai`
 * package's own `jsonSchema`).
 */
export interface AiSdkTool<Schema> {
  description: string;
  inputSchema: Schema;
  execute(input: unknown, options: { abortSignal?: AbortSignal }): Promise<AiSdkToolOutput>;
  toModelOutput(options: { output: unknown }): AiSdkModelOutput;
}

/**
 * A call the tool refused or that failed, thrown from `execute` so the AI
 * SDK reports it as a `tool-error` part (what app code watching for
 * failures sees) and gives the model `error-text` with this same message.
 * `output` keeps what the tool returned (a failed `computer_act` carries
 * the screen after it) for the app.
 */
export class AiSdkToolCallError extends Error {
  readonly output: AiSdkToolOutput;
  constructor(output: AiSdkToolOutput) {
    super(textOf({ content: output.content.filter((part) => part.type === "text") }));
    this.name = "AiSdkToolCallError";
    this.output = output;
  }
}

/**
 * The tools as a record name → AI SDK tool, for `generateText({ tools })`.
 * Input is validated by the tool itself (`callTool`); a bad or failed call
 * throws `AiSdkToolCallError`, which the SDK turns into a `tool-error` the
 * app sees and `error-text` the model reads, the same text for both
 * (docs/architecture.md §10). Images go to the model as `image-data`
 * content, or `media` for a model of the previous specification (`{ model }`).
 *
 *     import { jsonSchema } from "ai";
 *     generateText({ model, tools: toAiSdkTools(computerTools(session), session, jsonSchema, { model }), ... })
 */
export function toAiSdkTools<Context, Schema>(
  tools: readonly ToolDefinition<z.ZodType, Context>[],
  context: Context,
  jsonSchema: (schema: Record<string, unknown>) => Schema,
  options: AiSdkToolsOptions = {},
): Record<string, AiSdkTool<Schema>> {
  const specification = specificationOf(options.model);
  return Object.fromEntries(
    tools.map((tool): [string, AiSdkTool<Schema>] => [
      tool.name,
      {
        description: tool.description,
        inputSchema: jsonSchema(jsonSchemaOf(tool as ToolDefinition)),
        async execute(input, options) {
          const output = toAiSdkOutput(await callTool(tool, input, context, options?.abortSignal));
          if (output.isError) throw new AiSdkToolCallError(output);
          return output;
        },
        toModelOutput: ({ output }) => toAiSdkModelOutput(output as AiSdkToolOutput, specification),
      },
    ]),
  );
}

/** A tool result as JSON-safe AI SDK tool output. */
export function toAiSdkOutput(result: ToolResult): AiSdkToolOutput {
  const base64 = (data: Uint8Array) => Buffer.from(data).toString("base64");
  return {
    content: result.content.flatMap((part): AiSdkToolOutput["content"] =>
      part.type === "text"
        ? [{ type: "text", text: part.text }]
        : part.type === "image"
          ? [{ type: "image", data: base64(part.data), mimeType: part.mimeType }]
          : [],
    ),
    files: result.content.flatMap((part) =>
      part.type === "file" ? [{ name: part.name, mimeType: part.mimeType, data: base64(part.data) }] : [],
    ),
    ...(result.isError ? { isError: true } : {}),
    ...(result.isError && result.error ? { error: result.error } : {}),
  };
}

/** "v2" for a model of the previous specification (`ai` 5's), else "v3". */
function specificationOf(model: AiSdkToolsOptions["model"]): "v2" | "v3" {
  const version = typeof model === "object" ? model.specificationVersion : model;
  return version === "v2" ? "v2" : "v3";
}

/**
 * What the model reads of an `AiSdkToolOutput`: text and images (as the
 * `specification` names them: see AiSdkModelOutput), or the error text.
 */
export function toAiSdkModelOutput(output: AiSdkToolOutput, specification: "v2" | "v3" = "v3"): AiSdkModelOutput {
  if (output.isError) {
    return { type: "error-text", value: textOf({ content: output.content.filter((p) => p.type === "text") }) };
  }
  const image = specification === "v2" ? ("media" as const) : ("image-data" as const);
  const value = output.content.map((part) =>
    part.type === "text"
      ? { type: "text" as const, text: part.text }
      : { type: image, data: part.data, mediaType: part.mimeType },
  );
  return { type: "content", value: value.length > 0 ? value : [{ type: "text", text: "(no output)" }] };
}
