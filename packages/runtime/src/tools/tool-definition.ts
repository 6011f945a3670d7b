import { AgentComputerError, parseInput } from "@agent-computer/core";
import type { z } from "zod";
import { closedSchema } from "./closed-schema.js";
import type { ToolResult } from "./tool-result.js";

/**
 * A tool a model can call, independent of any agent framework. Adapters turn
 * it into Pi, AI SDK, MCP or JSON Schema tools. `Context` is what the handler
 * is bound to (a computer and a bot).
 */
export interface ToolDefinition<Schema extends z.ZodType = z.ZodType, Context = unknown> {
  /** snake_case, unique in a tool set. */
  readonly name: string;
  /** Written for a model: what the tool does, when to use it, what it returns. */
  readonly description: string;
  readonly inputSchema: Schema;
  /** Whether the call changes anything (mutating calls become activity events). */
  readonly mutating: boolean;
  handler(input: z.output<Schema>, context: Context, signal?: AbortSignal): Promise<ToolResult>;
}

/**
 * Declares a tool with its input type inferred from the schema. The schema
 * is closed (`closedSchema`): an argument the tool does not take is refused
 * by name, and every adapter's JSON Schema says `additionalProperties: false`.
 */
export function defineTool<Schema extends z.ZodType, Context>(
  definition: ToolDefinition<Schema, Context>,
): ToolDefinition<Schema, Context> {
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(definition.name)) {
    throw new AgentComputerError("INVALID_ARGUMENT", `Invalid tool name "${definition.name}": use snake_case.`);
  }
  return { ...definition, inputSchema: closedSchema(definition.inputSchema) };
}

/**
 * Validates raw model input and runs the tool. Errors become an error result
 * a model can read instead of a thrown exception, so a bad call never ends a
 * run; the code is kept in the text.
 */
export async function callTool<Schema extends z.ZodType, Context>(
  tool: ToolDefinition<Schema, Context>,
  rawInput: unknown,
  context: Context,
  signal?: AbortSignal,
): Promise<ToolResult> {
  try {
    const input = parseInput(tool.inputSchema, rawInput, `input to ${tool.name}`);
    return await tool.handler(input, context, signal);
  } catch (error) {
    if (!AgentComputerError.is(error)) throw error;
    return {
      isError: true,
      content: [{ type: "text", text: `${error.code}: ${error.message}` }],
      error: { code: error.code, message: error.message, retryable: error.retryable },
    };
  }
}
