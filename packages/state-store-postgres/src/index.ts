export { POSTGRES_CLOCK_TOLERANCE_MS } from "./postgres-clock.js";
export { PostgresStateStore } from "./postgres-state-store.js";
export type { PostgresStateStoreOptions } from "./postgres-state-store-options.js";
