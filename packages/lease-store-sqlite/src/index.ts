export { SqliteLeaseStore } from "./sqlite-lease-store.js";
export type { SqliteLeaseStoreOptions } from "./sqlite-lease-store-options.js";
