export { SqliteStateStore } from "./sqlite-state-store.js";
export type { SqliteStateStoreOptions } from "./sqlite-state-store-options.js";
