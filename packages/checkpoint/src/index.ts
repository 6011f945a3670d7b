// Sealed workspace checkpoints (docs/architecture.md §8): the
// codec (pack, seal, open, restore) and the home-store port with its local
// implementation. See codec/README.md.

export { type CheckedHomeArchive, type CheckedHomeStats, checkHomeArchive } from "./codec/check-home-archive.js";
export { HEADER_BYTES, SEALED_SEGMENT_BYTES, SEGMENT_BYTES, TAG_BYTES } from "./codec/checkpoint-format.js";
export type { CheckpointKey } from "./codec/checkpoint-key.js";
export type { HomeEntry, HomeEntryItem } from "./codec/entry-reader.js";
export { homeExportFailure } from "./codec/home-export-failure.js";
export { joinHomeParts } from "./codec/home-parts.js";
export { HOME_TRANSFER_EXIT, HOME_TRANSFER_SCRIPTS, IMPORT_ENV } from "./codec/home-transfer-scripts.js";
export {
  importHomeByScripts,
  type ScriptedHomeImport,
  type TransferScriptResult,
} from "./codec/import-home-by-scripts.js";
export { openCheckpoint } from "./codec/open-checkpoint.js";
export { isTransientProfilePath, packHome, TRANSIENT_PROFILE_NAMES } from "./codec/pack-home.js";
export type { PackOptions } from "./codec/pack-options.js";
export type { PackStats } from "./codec/pack-stats.js";
export type { PackedHome } from "./codec/packed-home.js";
export { readHomeArchive } from "./codec/read-home-archive.js";
export {
  recoverInterruptedRestore,
  restoreHome,
  restoreHomeEntries,
  type StageHomeOptions,
  stageHome,
  stageHomeEntries,
} from "./codec/restore-home.js";
export { DEFAULT_RESTORE_LIMITS, type RestoreLimits, restoreLimitsSchema } from "./codec/restore-limits.js";
export type { RestoreStats } from "./codec/restore-stats.js";
export { listArchivedFolder, readArchivedFile } from "./codec/scan-home-archive.js";
export { sealCheckpoint } from "./codec/seal-checkpoint.js";
export type { StagedHome } from "./codec/staged-home.js";
export type { AgentHomeStore } from "./home-store/agent-home-store.js";
export type { HomeCheckpoint } from "./home-store/home-checkpoint.js";
export type { HomeCheckpointRequest } from "./home-store/home-checkpoint-request.js";
export {
  homeCheckpointRequestSchema,
  homeKeySchema,
  homePlaceSchema,
  homeRestoreRequestSchema,
} from "./home-store/home-request-schemas.js";
export type { HomeRestoreRequest } from "./home-store/home-restore-request.js";
export type { HomeSource } from "./home-store/home-source.js";
export type { HomeTarget } from "./home-store/home-target.js";
export { LocalAgentHomeStore } from "./home-store/local-agent-home-store.js";
export type { LocalAgentHomeStoreOptions } from "./home-store/local-agent-home-store-options.js";
export type { StoredHomeEntry, StoredHomeFile, StoredHomeRange } from "./home-store/stored-home-entry.js";
export { MAX_STORED_READ_BYTES } from "./home-store/stored-home-folder.js";
