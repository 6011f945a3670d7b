// A loopback Daytona for tests: the SDK's wire calls, sandboxes as real containers (docs/architecture.md §12).
export type { FaultRule } from "@agent-computer/testing/emulator";
export { DaytonaEmulator, PREVIEW_TOKEN_PARAM } from "./daytona-emulator.js";
export type { DaytonaEmulatorOptions, EmulatedSandboxState } from "./daytona-emulator-options.js";
export { EMULATOR_LABEL } from "./daytona-sandbox.js";
