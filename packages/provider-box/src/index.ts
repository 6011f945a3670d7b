export {
  BOX_GONE_STATES,
  BOX_READY_STATES,
  BoxClient,
  type BoxClientOptions,
  type BoxCommandResult,
  type BoxCommandStatus,
  type BoxNamedSnapshot,
  type BoxRecord,
  CONFIRM_DELETE_HEADER,
  DEFAULT_BOX_BASE_URL,
  MAX_COMMAND_SECONDS,
} from "./box-client.js";
export { BoxMachine } from "./box-machine.js";
export { BOX_CAPABILITIES, boxNameOf, boxProvider, labelsOfBox } from "./box-provider.js";
export { type BoxProviderOptions, boxProviderOptionsSchema } from "./box-provider-options.js";
export { NamedSnapshot, type SnapshotState, snapshotNameOf } from "./named-snapshot.js";
