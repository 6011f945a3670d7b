export type { ActivityEvent } from "./activity-event.js";
export { ComputerToolSession, type ComputerToolSessionOptions, DEFAULT_DESKTOP_APPS } from "./computer-tool-session.js";
export { type ComputerTool, computerTools } from "./computer-tools.js";
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
export type { ToolContent, ToolResult } from "./tool-result.js";
