import type { ResolvedComputerSpec } from "@agent-computer/core";
import type { FakeDesktop } from "./fake-desktop.js";

/** One fake machine as the provider keeps it; shared by all handles to it. */
export interface FakeMachineState {
  readonly id: string;
  readonly spec: ResolvedComputerSpec;
  readonly homeDir: string;
  status: "running" | "stopped" | "destroyed";
  /** Process groups of commands still running, killed on stop and destroy. */
  readonly processGroups: Set<number>;
  /** Open desktops by bot id. */
  readonly desktops: Map<string, FakeDesktop>;
  quiesced: boolean;
}
