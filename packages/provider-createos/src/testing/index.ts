// A loopback CreateOS sandbox service for tests, held to the operations written from the official SDKs (createos-definition.ts): VMs as real containers (docs/architecture.md §12).
export { CREATEOS_OPERATIONS } from "./createos-definition.js";
export {
  CREATEOS_EMULATOR_LABEL,
  CreateosEmulator,
  type CreateosEmulatorOptions,
  type CreateosFaultRule,
} from "./createos-emulator.js";
export { EMULATED_SHAPES } from "./createos-vms.js";
