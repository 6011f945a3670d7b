import type { AgentHomeStore } from "@agent-computer/runtime";

/** What the files service reads a stopped computer's home from: any `AgentHomeStore`. */
export type FilesHomeStore = Pick<AgentHomeStore, "list" | "read">;
