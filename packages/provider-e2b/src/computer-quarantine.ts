import type { ProviderRef } from "@agent-computer/core";

/**
 * Where quarantined computers are kept (Novita's rule, docs/architecture.md
 * §9): a computer one of whose commands could not be confirmed killed is
 * paused and listed here, and reconnect refuses it until `recover`. Back it
 * with the app's state store so heartbeats, jobs and restarts in every
 * process see it; the default keeps it in this process only.
 */
export interface ComputerQuarantine {
  /** Why the computer is quarantined, or undefined when it is not. */
  reasonOf(ref: ProviderRef): Promise<string | undefined>;
  add(ref: ProviderRef, reason: string): Promise<void>;
  remove(ref: ProviderRef): Promise<void>;
}

/** A quarantine list in this process's memory. */
export function memoryQuarantine(): ComputerQuarantine {
  const reasons = new Map<string, string>();
  return {
    reasonOf: async (ref) => reasons.get(ref),
    add: async (ref, reason) => {
      reasons.set(ref, reason);
    },
    remove: async (ref) => {
      reasons.delete(ref);
    },
  };
}
