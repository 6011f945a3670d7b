// A loopback E2B for offline tests of an app's E2B path (docs/architecture.md §12),
// and the service's published definition it is held to.
export {
  E2B_CONTROL_PLANE_OPERATIONS,
  E2B_OPERATIONS,
  ENVD_OPERATIONS,
} from "./e2b-definition.js";
export {
  CLIENT_ID,
  type ControlPlaneFault,
  E2B_EMULATOR_LABEL,
  E2bEmulator,
  type E2bEmulatorOptions,
  EMULATED_ENVD_VERSION,
  type EmulatedTemplateBuild,
  type EmulatorCall,
  TEMPLATE_USER,
} from "./e2b-emulator.js";
