import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";

/**
 * A `-32602 Invalid params` answer whose message is the sentence alone. The
 * SDK's McpError puts "MCP error -32602: " into its message, the server
 * sends that message, and the client adds the same prefix again; the SDK's
 * protocol layer answers any thrown error with its `code` and `message`.
 */
export function invalidParams(message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code: ErrorCode.InvalidParams });
}

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
  const invalid = invalidParams;
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
