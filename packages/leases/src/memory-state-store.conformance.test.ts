import { defineStateStoreConformance } from "@agent-computer/testing/conformance";
import { MemoryStateStore } from "./memory-state-store.js";

// The memory store runs the same suite the SQLite and PostgreSQL stores run.
defineStateStoreConformance({ name: "memory", createStore: () => new MemoryStateStore() });
