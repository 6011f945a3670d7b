// ObjectAgentHomeStore (docs/architecture.md §8): homes sealed in an S3-compatible bucket,
// with a local cache; the data key wrapped by the space's content key and
// kept with the computer record. See README.md.
export { ComputerHomeRecords } from "./computer-home-records.js";
export type { ComputerHomeRecordsOptions } from "./computer-home-records-options.js";
export { ContentKeyring } from "./content-keyring.js";
export type { HomeKeyring } from "./home-keyring.js";
export type { HomeReconcileResult } from "./home-reconcile-result.js";
export type { HomeRecord } from "./home-record.js";
export type { AdvanceRevisionInput, HomeRecords } from "./home-records.js";
export type { HomeStoreStage } from "./home-store-stage.js";
export { MemoryHomeRecords } from "./memory-home-records.js";
export { ObjectAgentHomeStore } from "./object-agent-home-store.js";
export type { ObjectAgentHomeStoreOptions } from "./object-agent-home-store-options.js";
