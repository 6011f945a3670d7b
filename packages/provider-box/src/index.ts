export type {
  BoatCommandResult,
  BoatCommandStatus,
  BoatNamedSnapshot,
  BoatSandbox,
} from "./boat-answers.js";
export {
  BOAT_API_URL,
  BOAT_GONE_STATES,
  BOAT_READY_STATES,
  BoatClient,
  type BoatClientOptions,
  CONFIRM_DELETE_HEADER,
  LEGACY_BOX_API_URL,
  MAX_COMMAND_SECONDS,
} from "./boat-client.js";
export { BoatMachine } from "./boat-machine.js";
export { labelsOfName, sandboxNameOf } from "./boat-names.js";
export { BOAT_CAPABILITIES, BOX_CAPABILITIES, boatProvider, boxProvider } from "./boat-provider.js";
export {
  type BoatProviderOptions,
  type BoatProviderOptions as BoxProviderOptions,
  boatProviderOptionsSchema,
} from "./boat-provider-options.js";
export { NamedSnapshot, type SnapshotState, snapshotNameOf } from "./named-snapshot.js";
