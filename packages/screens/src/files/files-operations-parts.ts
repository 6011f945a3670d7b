import type { ComputerScope } from "@agent-computer/leases";
import type { ActivityEvent } from "@agent-computer/runtime";
import type { FilesHomeStore } from "./files-home-store.js";
import type { FilesRuntime } from "./files-runtime.js";

/** What the operations need. */
export interface FilesOperationsParts {
  readonly runtime: FilesRuntime;
  readonly homeStore: FilesHomeStore;
  readonly previewMaxBytes: number;
  readonly uploadMaxBytes: number;
  readonly uploadFolders: (botId: string, scope: ComputerScope) => readonly string[];
  readonly onActivity: ((event: ActivityEvent) => void) | undefined;
  readonly clock: () => number;
}
