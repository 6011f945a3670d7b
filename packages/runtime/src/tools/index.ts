export type { ActivityEvent } from "./activity-event.js";
export {
  type AiSdkModelOutput,
  type AiSdkTool,
  AiSdkToolCallError,
  type AiSdkToolOutput,
  toAiSdkModelOutput,
  toAiSdkOutput,
  toAiSdkTools,
} from "./ai-sdk-tools.js";
export {
  type AnthropicComputerToolOptions,
  type AnthropicComputerToolVersion,
  anthropicComputerTool,
} from "./anthropic-computer-tool.js";
export { renderPageSnapshot } from "./browser-tools.js";
export { ComputerToolSession, type ComputerToolSessionOptions, DEFAULT_DESKTOP_APPS } from "./computer-tool-session.js";
export { type ComputerTool, computerTools } from "./computer-tools.js";
export {
  type AnthropicComputerAction,
  type ComputerUseBatch,
  type ComputerUseScaling,
  fromAnthropicComputerAction,
  fromOpenAiComputerActions,
  type OpenAiComputerAction,
  type ScreenSize,
  scalePoint,
  toModelPoint,
} from "./computer-use-actions.js";
export type { ComputerUseTool } from "./computer-use-tool.js";
export { type McpCallToolResult, type McpTool, type McpToolAnnotations, toMcpTools } from "./mcp-tools.js";
export {
  type OpenAiComputerInput,
  type OpenAiComputerToolOptions,
  openAiComputerTool,
} from "./openai-computer-tool.js";
export { redactSecrets } from "./redact-secrets.js";
export {
  type JsonSchemaTool,
  jsonSchemaOf,
  type PiAgentTool,
  textOf,
  toJsonSchemaTools,
  toPiTools,
} from "./tool-adapters.js";
export { callTool, defineTool, type ToolDefinition } from "./tool-definition.js";
export type { ToolContent, ToolError, ToolResult } from "./tool-result.js";
