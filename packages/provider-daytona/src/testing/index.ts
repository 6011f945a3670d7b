// A loopback Daytona for tests: the SDK's wire calls, sandboxes as real containers (docs/architecture.md §12).
export { DaytonaEmulator, EMULATOR_LABEL, PREVIEW_TOKEN_PARAM } from "./daytona-emulator.js";
export type { DaytonaEmulatorOptions } from "./daytona-emulator-options.js";
export type { EmulatedSandboxState } from "./emulated-sandbox-state.js";
export type { FaultRule } from "./fault-rule.js";
