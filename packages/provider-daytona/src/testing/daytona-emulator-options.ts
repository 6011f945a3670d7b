import type Docker from "dockerode";

/** How a `DaytonaEmulator` runs. */
export interface DaytonaEmulatorOptions {
  /** The engine whose containers back the sandboxes. */
  docker: Docker;
  /** The only key the emulated API accepts (as `Authorization: Bearer <key>`). */
  apiKey: string;
  /** Snapshot names and the images they stand for; a name not here is itself an image ref. */
  snapshots?: Record<string, string>;
  /** Added to every start (create, start, start from archive): a slow start. */
  startDelayMs?: number;
  /**
   * When set, a start call waits this long for the sandbox to start and
   * answers 504 if it has not, as a proxy in front of the server's own
   * 30 s wait does (Daytona PR #2204); the start goes on regardless.
   */
  startAnswerWaitMs?: number;
  /** The uid:gid commands run as (default "1000:1000", the image's user). */
  user?: string;
  /** The Docker network sandboxes join (default "bridge"). */
  network?: string;
  /**
   * Names resolved in every sandbox (its /etc/hosts) and by its network
   * fence, standing in for public DNS (name to IPv4 address).
   */
  publicHosts?: Record<string, string>;
}

/** The sandbox states the emulator moves through (a subset of Daytona's `SandboxState`). */
export type EmulatedSandboxState =
  | "creating"
  | "starting"
  | "started"
  | "stopping"
  | "stopped"
  | "archiving"
  | "archived"
  | "restoring"
  | "destroying"
  | "destroyed"
  | "pausing"
  | "paused"
  | "resuming"
  | "snapshotting"
  | "forking"
  | "error";
