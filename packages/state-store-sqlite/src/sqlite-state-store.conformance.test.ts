import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineStateStoreConformance } from "@agent-computer/testing/conformance";
import { SqliteStateStore } from "./sqlite-state-store.js";

const file = join(mkdtempSync(join(tmpdir(), "sqlite-lease-")), "state.db");

// Two handles on one file: the races run across connections as they do
// across processes (the worker-process test covers processes themselves).
defineStateStoreConformance({
  name: "sqlite",
  createStore: () => SqliteStateStore.open({ path: file }),
  openAnother: () => SqliteStateStore.open({ path: file }),
  closeStore: (store) => (store as SqliteStateStore).close(),
});
