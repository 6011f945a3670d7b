export type { DetachedChannel, SyncAnswer, WakeOption } from "./detached-channel.js";
export { type DetachedCommand, runDetachedCommand } from "./detached-command.js";
export {
  downloadInParts,
  FILE_PART_BYTES,
  type FileChannel,
  type PartOptions,
  removeFileAndParts,
  stageBytes,
  uploadInParts,
} from "./file-parts.js";
export { HOSTED_COMPUTER_CAPABILITIES, SERVICE_ID_PATTERN } from "./hosted-capabilities.js";
export { HostedMachine, type HostedMachineSettings, text } from "./hosted-machine.js";
export {
  type ComputerQuarantine,
  memoryQuarantine,
  type QuarantineRecords,
  stateStoreQuarantine,
} from "./machine-quarantine.js";
export { abortableSleep, type RetryWithinOptions, retryWithin } from "./retry-within.js";
export type { CommandUser, SecondUserDisplay } from "./second-user-display.js";
export {
  isNetworkFailure,
  isTransientStatus,
  redactSecrets,
  type ServiceFailure,
  serviceFailure,
  statusOfFailure,
} from "./service-failure.js";
export { shellQuote } from "./shell-quote.js";
export { stoppedUnderCommand } from "./stopped-under-command.js";
