// The computer runtime (docs/architecture.md §2): Team and Private
// computers for bots, their runs, operations and reconciliation, and the
// agent tools with their adapters (Pi, the AI SDK, MCP, JSON Schema).

export {
  type AgentHomeStore,
  LocalAgentHomeStore,
  type StoredHomeEntry,
  type StoredHomeFile,
  type StoredHomeRange,
} from "@agent-computer/checkpoint";
// What an app wires up beside the runtime, so one import line gets it going.
export { AgentComputerError, type ErrorCode } from "@agent-computer/core";
export { MemoryStateStore } from "@agent-computer/leases";
export * from "./runtime/index.js";
export * from "./tools/index.js";
