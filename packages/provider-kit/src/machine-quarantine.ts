import { AgentComputerError, type ProviderRef } from "@agent-computer/core";

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

/**
 * The part of a state store (`@agent-computer/leases`' `StateStore`: the
 * memory, SQLite and PostgreSQL stores) the quarantine needs: versioned
 * records and one compare-and-set. Typed here by shape so this package
 * needs no dependency on the stores.
 */
export interface QuarantineRecords {
  read(
    keys: readonly string[],
  ): Promise<Map<string, { key: string; version: number; value: Readonly<Record<string, unknown>> }>>;
  commit(
    expect: readonly { key: string; version: number | null }[],
    write: readonly { key: string; version: number; value: Readonly<Record<string, unknown>> }[],
  ): Promise<boolean>;
}

/**
 * A quarantine list in the app's state store, so every process sharing it
 * (workers, heartbeats, jobs, a restart) refuses the computer until one of
 * them recovers it. One record per ref under `quarantine/`, written by
 * compare-and-set (a store has no delete: recovering clears the reason).
 */
export function stateStoreQuarantine(store: QuarantineRecords): ComputerQuarantine {
  const keyOf = (ref: ProviderRef) => `quarantine/${ref}`;
  const set = async (ref: ProviderRef, reason: string | null) => {
    const key = keyOf(ref);
    for (let attempt = 0; attempt < 20; attempt++) {
      const current = (await store.read([key])).get(key);
      if (reason === null && !current?.value.reason) return;
      const version = (current?.version ?? 0) + 1;
      const written = await store.commit(
        [{ key, version: current?.version ?? null }],
        [{ key, version, value: { reason } }],
      );
      if (written) return;
    }
    throw new AgentComputerError("UNAVAILABLE", `The quarantine record of ${ref} kept changing; try again.`);
  };
  return {
    reasonOf: async (ref) => {
      const reason = (await store.read([keyOf(ref)])).get(keyOf(ref))?.value.reason;
      return typeof reason === "string" ? reason : undefined;
    },
    add: (ref, reason) => set(ref, reason),
    remove: (ref) => set(ref, null),
  };
}
