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
  | "error";
