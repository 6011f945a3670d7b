// A loopback Boat service for tests, held to boat-v1.yaml (boat-definition.ts): sandboxes as real containers (docs/architecture.md §12).
export { SYNC_OUTPUT_CAP } from "./boat-commands.js";
export { BOAT_OPERATIONS } from "./boat-definition.js";
export {
  BOAT_EMULATOR_LABEL,
  BoatEmulator,
  type BoatEmulatorOptions,
  type BoatFaultRule,
} from "./boat-emulator.js";
