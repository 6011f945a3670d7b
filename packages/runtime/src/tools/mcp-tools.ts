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

/** MCP's `ToolAnnotations` (hints a client may show, never trusts). */
export interface McpToolAnnotations {
  readonly title: string;
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/**
 * A tool as an MCP server lists and calls it, built as a plain object so
 * core imports no MCP package: `{ name, description, inputSchema }` is the
 * `tools/list` entry, `call(args)` answers `tools/call`.
 */
export interface McpTool {
  readonly name: string;
  /** For people (a client's tool list): the name in words, "Read file" for `read_file`. */
  readonly title: string;
  readonly description: string;
  /**
   * MCP's tool hints, from whether the tool changes anything: a tool that
   * does not is read-only and idempotent; one that does may destroy (it
   * writes files, runs commands, acts on the desktop). Every tool works on
   * a computer that reaches the outside world, so none is closed-world.
   */
  readonly annotations: McpToolAnnotations;
  /** JSON Schema of the arguments (`type: "object"`). */
  readonly inputSchema: { type: "object"; [key: string]: unknown };
  call(args: unknown, signal?: AbortSignal): Promise<McpCallToolResult>;
}

/**
 * The tools as MCP tools bound to `context`. Bad arguments and failed calls
 * come back as `isError` results with the reason (MCP's tool-error
 * convention) and, as `structuredContent.error`, its code, message and
 * whether a retry may help; images as MCP image content (base64), files (attach_file)
 * as embedded resources (`attachment:///<name>`, base64 blob).
 */
export function toMcpTools<Context>(tools: readonly ToolDefinition<z.ZodType, Context>[], context: Context): McpTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    title: titleOf(tool.name),
    description: tool.description,
    annotations: {
      title: titleOf(tool.name),
      readOnlyHint: !tool.mutating,
      destructiveHint: tool.mutating,
      idempotentHint: !tool.mutating,
      openWorldHint: true,
    },
    inputSchema: { type: "object", ...jsonSchemaOf(tool as ToolDefinition) },
    async call(args, signal) {
      return toMcpResult(await callTool(tool, args ?? {}, context, signal));
    },
  }));
}

/** `read_file` -> "Read file". */
function titleOf(name: string): string {
  const words = name.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
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
  if (!result.isError) return { content };
  // The failure as data beside its words: MCP's structured content, for programs.
  return { content, isError: true, ...(result.error ? { structuredContent: { error: result.error } } : {}) };
}
