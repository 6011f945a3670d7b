// A loopback E2B for offline tests of an app's E2B path (docs/architecture.md §12).
export {
  type ControlPlaneFault,
  E2B_EMULATOR_LABEL,
  E2bEmulator,
  type E2bEmulatorOptions,
  EMULATED_ENVD_VERSION,
  type EmulatedTemplateBuild,
  type EmulatorCall,
} from "./e2b-emulator.js";
