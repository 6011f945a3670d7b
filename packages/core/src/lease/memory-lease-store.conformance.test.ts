import { defineStateStoreConformance } from "../conformance/index.js";
import { MemoryLeaseStore } from "./memory-lease-store.js";

// The memory store runs the same suite the SQLite and PostgreSQL stores run.
defineStateStoreConformance({ name: "memory", createStore: () => new MemoryLeaseStore() });
