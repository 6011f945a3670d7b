export { BotRun } from "./bot-run.js";
export type { ComputerEvent } from "./computer-event.js";
export { ComputerRuntime, createComputerRuntime } from "./computer-runtime.js";
export type { ComputerRuntimeOptions } from "./computer-runtime-options.js";
export { type RuntimeSettings, runtimeSettingsFromEnv } from "./runtime-settings.js";
