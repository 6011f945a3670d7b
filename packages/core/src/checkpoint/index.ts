export { isTransientProfilePath, type PackedHome, type PackOptions, type PackStats, packHome } from "./pack-home.js";
export { type RestoreStats, restoreHome } from "./restore-home.js";
export { DEFAULT_RESTORE_LIMITS, type RestoreLimits } from "./restore-limits.js";
