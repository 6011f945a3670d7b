export { PostgresStateStore } from "./postgres-state-store.js";
export type { PostgresStateStoreOptions } from "./postgres-state-store-options.js";
