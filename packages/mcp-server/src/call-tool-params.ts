import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/** What a `tools/call` request carries once checked. */
export interface CallToolParams {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

const kindOf = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "an array" : typeof value);

/**
 * The params of a `tools/call` request, or the `-32602 Invalid params`
 * protocol error the MCP specification names, with one sentence a person
 * can act on instead of a schema library's dump (docs/architecture.md §10).
 */
export function callToolParams(params: unknown): CallToolParams {
  const invalid = (message: string) => new McpError(ErrorCode.InvalidParams, message);
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw invalid(`tools/call needs params { name, arguments }, got ${kindOf(params)}.`);
  }
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string" || name === "") {
    throw invalid(`tools/call needs params.name, the tool's name as a string; got ${kindOf(name)}.`);
  }
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
    throw invalid(`tools/call params.arguments must be an object of the tool's named arguments, got ${kindOf(args)}.`);
  }
  return { name, arguments: (args ?? {}) as Record<string, unknown> };
}
