export { BoxdClient, type BoxdClientOptions, type BoxdVm, grpcCodeOf } from "./boxd-client.js";
export { commandLineOf } from "./boxd-command.js";
export { BOXD_METHODS, BOXD_SERVICE, type BoxdMethod, decodeMessage, encodeMessage } from "./boxd-definition.js";
export { BoxdMachine, PUBLIC_PORT } from "./boxd-machine.js";
export { labelsOfName, MAX_NAME_CHARS, machineNameOf } from "./boxd-names.js";
export { BOXD_CAPABILITIES, boxdProvider } from "./boxd-provider.js";
export {
  BOXD_API_URL,
  BOXD_TOKEN_URL,
  type BoxdProviderOptions,
  boxdProviderOptionsSchema,
} from "./boxd-provider-options.js";
export { SetupSnapshot, type SetupSnapshotState, setupSnapshotNameOf } from "./boxd-setup-snapshot.js";
export { BoxdTokenSource } from "./boxd-token.js";
export { type ListedVm, vmsOfListAnswer } from "./boxd-vm-list.js";
export { isWireMessage, readWireFields, type WireField } from "./protobuf-wire.js";
