// The page browser's shared machinery (docs/architecture.md §5), free of any DOM library, so the in-computer helper can bundle
// it. The happy-dom emulator and the fake browser are the `/emulator` subpath.
export type { CollectedPage } from "./collected-page.js";
export { InMemorySnapshotMemory } from "./in-memory-snapshot-memory.js";
export type { PageEngine } from "./page-engine.js";
export { PAGE_SCRIPT } from "./page-script.js";
export { PageSession, type PageSessionOptions } from "./page-session.js";
export type { RememberedSnapshot } from "./remembered-snapshot.js";
export type { SnapshotMemory } from "./snapshot-memory.js";
