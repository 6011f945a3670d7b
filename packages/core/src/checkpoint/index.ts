export type { AgentHomeStore } from "../home-store/agent-home-store.js";
export type { HomeCheckpoint } from "../home-store/home-checkpoint.js";
export type { HomeCheckpointRequest } from "../home-store/home-checkpoint-request.js";
export {
  homeCheckpointRequestSchema,
  homeKeySchema,
  homePlaceSchema,
  homeRestoreRequestSchema,
} from "../home-store/home-request-schemas.js";
export type { HomeRestoreRequest } from "../home-store/home-restore-request.js";
export type { HomeSource } from "../home-store/home-source.js";
export type { HomeTarget } from "../home-store/home-target.js";
export { LocalAgentHomeStore } from "../home-store/local-agent-home-store.js";
export type { LocalAgentHomeStoreOptions } from "../home-store/local-agent-home-store-options.js";
export { HEADER_BYTES, SEALED_SEGMENT_BYTES, SEGMENT_BYTES, TAG_BYTES } from "./checkpoint-format.js";
export type { CheckpointKey } from "./checkpoint-key.js";
export { openCheckpoint } from "./open-checkpoint.js";
export { isTransientProfilePath, packHome, TRANSIENT_PROFILE_NAMES } from "./pack-home.js";
export type { PackOptions } from "./pack-options.js";
export type { PackStats } from "./pack-stats.js";
export type { PackedHome } from "./packed-home.js";
export { recoverInterruptedRestore, restoreHome, stageHome } from "./restore-home.js";
export { DEFAULT_RESTORE_LIMITS, type RestoreLimits, restoreLimitsSchema } from "./restore-limits.js";
export type { RestoreStats } from "./restore-stats.js";
export { sealCheckpoint } from "./seal-checkpoint.js";
export type { StagedHome } from "./staged-home.js";
