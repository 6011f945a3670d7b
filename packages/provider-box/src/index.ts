export {
  BOX_GONE_STATES,
  BOX_READY_STATES,
  BoxClient,
  type BoxClientOptions,
  type BoxCommandResult,
  type BoxCommandStatus,
  type BoxNamedSnapshot,
  type BoxRecord,
  DEFAULT_CONFIRM_DELETE_HEADER,
  MAX_COMMAND_SECONDS,
} from "./box-client.js";
export { BoxMachine } from "./box-machine.js";
export { BOX_CAPABILITIES, boxNameOf, boxProvider, labelsOfBox } from "./box-provider.js";
export { type BoxProviderOptions, boxProviderOptionsSchema } from "./box-provider-options.js";
export { NamedSnapshot, type SnapshotState, snapshotNameOf } from "./named-snapshot.js";
