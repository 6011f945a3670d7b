import type { z } from "zod";
import { jsonSchemaOf } from "./tool-adapters.js";
import { callTool, type ToolDefinition } from "./tool-definition.js";
import type { ToolResult } from "./tool-result.js";

/** An MCP `CallToolResult`, as `@modelcontextprotocol/sdk` servers return it. */
export interface McpCallToolResult {
  [key: string]: unknown;
  content: (
    | { type: "text"; text: string }
    | { type: "image"; data: string; mimeType: string }
    | { type: "resource"; resource: { uri: string; mimeType: string; blob: string } }
  )[];
  isError?: boolean;
}

/**
 * A tool as an MCP server lists and calls it, built as a plain object so
 * core imports no MCP package: `{ name, description, inputSchema }` is the
 * `tools/list` entry, `call(args)` answers `tools/call`.
 */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments (`type: "object"`). */
  readonly inputSchema: { type: "object"; [key: string]: unknown };
  call(args: unknown, signal?: AbortSignal): Promise<McpCallToolResult>;
}

/**
 * The tools as MCP tools bound to `context`. Bad arguments and failed calls
 * come back as `isError` results with the reason (MCP's tool-error
 * convention), images as MCP image content (base64), files (attach_file)
 * as embedded resources (`attachment:///<name>`, base64 blob).
 */
export function toMcpTools<Context>(tools: readonly ToolDefinition<z.ZodType, Context>[], context: Context): McpTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: { type: "object", ...jsonSchemaOf(tool as ToolDefinition) },
    async call(args, signal) {
      return toMcpResult(await callTool(tool, args ?? {}, context, signal));
    },
  }));
}

/** A tool result as an MCP `CallToolResult`. */
export function toMcpResult(result: ToolResult): McpCallToolResult {
  const content = result.content.map((part): McpCallToolResult["content"][number] =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : part.type === "image"
        ? { type: "image", data: Buffer.from(part.data).toString("base64"), mimeType: part.mimeType }
        : {
            type: "resource",
            resource: {
              uri: `attachment:///${encodeURIComponent(part.name)}`,
              mimeType: part.mimeType,
              blob: Buffer.from(part.data).toString("base64"),
            },
          },
  );
  return { content, ...(result.isError ? { isError: true } : {}) };
}
