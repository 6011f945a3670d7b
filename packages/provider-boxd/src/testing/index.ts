export { BOXD_OPERATIONS, undeclaredFields } from "./boxd-definition.js";
export { BoxdEmulator, type BoxdEmulatorOptions } from "./boxd-emulator.js";
export { BoxdSnapshots, type SnapshotRecord } from "./boxd-snapshots.js";
export { BOXD_HOME, BoxdVms, MACHINE_USER, type VmRecord } from "./boxd-vms.js";
