// What every provider repeats, written once (docs/architecture.md §9), so
// a provider package only translates its platform's API.
// A provider from its three verbs on checked requests.

// Entering any other call, and work tied to the call's signal.
export { abortable, destroyOnAbort } from "./abortable.js";
// What an egress policy lets an address be.
export { AddressRules, METADATA_ADDRESSES, parseAddress } from "./address-rules.js";
// A machine reached through a command channel: exec and home files over the provider's runCommand.
export { CommandChannelMachine } from "./command-channel-machine.js";
export { defineSandboxProvider } from "./define-sandbox-provider.js";
export { endToEndHeaders } from "./end-to-end-headers.js";
export { enterOperation } from "./enter-operation.js";
// A home's files: a folder of this host, or a machine through its command
// channel, and the MachineFiles a machine builds over either.
export { ExecHomeFiles } from "./exec-home-files.js";
export type { HomeFiles } from "./home-files.js";
export type { HomeScriptRunner } from "./home-script-runner.js";
export type { ListRequest } from "./list-request.js";
export { LocalHome } from "./local-home.js";
// Commands: a checked ExecRequest as the command a runner takes, and the runner's bookkeeping.
export {
  type CheckedExecRequest,
  type MachineCommand,
  machineCommandOf,
  parseExecRequest,
  pathInHome,
} from "./machine-command.js";
export type { MachineDesktops } from "./machine-desktops.js";
export {
  type MachineFilesOverHomeOptions,
  machineFilesOverHome,
  parseListOptions,
  parseReadOptions,
} from "./machine-files-over-home.js";
export type { ProvisionDefaults, ProvisionRequest } from "./provision-request.js";
export { matchRefId, type ReconnectRequest } from "./reconnect-request.js";
export {
  END_AFTER_KILL_MS,
  KILL_TREE_LIMIT_MS,
  RunningCommand,
  type RunningCommandOptions,
} from "./running-command.js";
export type { SandboxProviderDefinition } from "./sandbox-provider-definition.js";
