export { PostgresLeaseStore } from "./postgres-lease-store.js";
export type { PostgresLeaseStoreOptions } from "./postgres-lease-store-options.js";
