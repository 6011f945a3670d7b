// A loopback Box service for tests: the API box-client.ts speaks, boxes as real containers (docs/architecture.md §12).
export {
  BOX_EMULATOR_LABEL,
  BoxEmulator,
  type BoxEmulatorOptions,
  type BoxFaultRule,
  SYNC_OUTPUT_CAP,
} from "./box-emulator.js";
