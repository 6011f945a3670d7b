import { z } from "zod";
import { callTool, type ToolDefinition } from "./tool-definition.js";
import type { ToolResult } from "./tool-result.js";

/** A tool as plain JSON Schema, for any agent loop. */
export interface JsonSchemaTool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft 2020-12) of the input; defaulted fields are optional. */
  readonly inputSchema: Record<string, unknown>;
}

/** The input JSON Schema of a tool, as a model should fill it in. */
export function jsonSchemaOf(tool: ToolDefinition): Record<string, unknown> {
  const { $schema: _drop, ...schema } = z.toJSONSchema(tool.inputSchema, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return schema;
}

/** The tools as `{ name, description, inputSchema }`; run them with `callTool`. */
export function toJsonSchemaTools(tools: readonly ToolDefinition[]): JsonSchemaTool[] {
  return tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: jsonSchemaOf(tool) }));
}

/**
 * What `@mariozechner/pi-agent-core` takes as an `AgentTool`, built as a
 * plain object so core imports no Pi package. Images travel as base64;
 * files (attach_file) travel in `details.files` for the app; a failed call
 * throws, as Pi expects, with the message the model should read.
 */
export interface PiAgentTool {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  execute(
    toolCallId: string,
    params: unknown,
    signal?: AbortSignal,
  ): Promise<{
    content: ({ type: "text"; text: string } | { type: "image"; data: string; mimeType: string })[];
    details: { files: { name: string; mimeType: string; data: Uint8Array }[] };
  }>;
}

type PiContent = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

export function toPiTools<Context>(
  tools: readonly ToolDefinition<z.ZodType, Context>[],
  context: Context,
): PiAgentTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    label: tool.name.replace(/_/g, " "),
    description: tool.description,
    parameters: jsonSchemaOf(tool as ToolDefinition),
    async execute(_toolCallId, params, signal) {
      const result = await callTool(tool, params, context, signal);
      if (result.isError) throw new Error(textOf(result));
      return {
        content: result.content.flatMap((part): PiContent[] =>
          part.type === "text"
            ? [{ type: "text" as const, text: part.text }]
            : part.type === "image"
              ? [{ type: "image" as const, data: Buffer.from(part.data).toString("base64"), mimeType: part.mimeType }]
              : [],
        ),
        details: {
          files: result.content.flatMap((part) =>
            part.type === "file" ? [{ name: part.name, mimeType: part.mimeType, data: part.data }] : [],
          ),
        },
      };
    },
  }));
}

/** The text parts of a result, joined. */
export function textOf(result: ToolResult): string {
  return result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
}
