import type { ComputerScope } from "@agent-computer/leases";
import type { ActivityEvent } from "@agent-computer/runtime";
import type { FilesHomeStore } from "./files-home-store.js";
import type { FilesRuntime } from "./files-runtime.js";

/** Options of `createFiles`. */
export interface FilesOptions {
  /** The runtime the computers belong to (`createComputerRuntime`'s result is one). */
  runtime: FilesRuntime;
  /** The runtime's home store: a stopped computer is listed and previewed from it, without starting. */
  homeStore: FilesHomeStore;
  /** 32 random bytes; capabilities are sealed under a key derived from them (another label than screens'). */
  secret: Uint8Array;
  /** Where the page and its API are served (default "/files"). */
  publicPath?: string;
  /** The largest upload, in bytes (default 10 MiB, the `attach_file` limit). */
  uploadMaxBytes?: number;
  /** The most of a file a preview shows, in bytes (default 256 KiB). */
  previewMaxBytes?: number;
  /**
   * Folders (home-relative) a control capability may upload into, and none
   * else. Default: the bot's own folder, as its tools see it: `bots/<bot>`
   * on a Team computer, the whole home (`.`) on a Private one.
   */
  uploadFolders?: (botId: string, scope: ComputerScope) => readonly string[];
  /** How often a visible page refreshes its folder, in milliseconds (default 3000). */
  refreshMs?: number;
  /** Receives a `computer.command` event for every upload, failures included (tool `upload_file`). */
  onActivity?: (event: ActivityEvent) => void;
  /** The page's CSP `frame-ancestors` (default "'self'"). */
  frameAncestors?: string;
  /** Milliseconds since the epoch (tests). */
  clock?: () => number;
}
