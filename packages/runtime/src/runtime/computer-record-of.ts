import { AgentComputerError } from "@agent-computer/core";
import type { ComputerOwner, ComputerRecord, ComputerScope, LeaseEngine } from "@agent-computer/leases";
import type { ComputerSlot } from "./computer-slot.js";

/** Makes the computer's record (no machine yet) with the slot's scope and owner; another process's, when it was first. */
export async function createRecord(
  leases: LeaseEngine,
  slot: ComputerSlot,
  providerKind: string,
): Promise<ComputerRecord> {
  try {
    return await leases.createComputer({
      computerId: slot.computerId,
      providerKind: providerKind,
      providerRef: null,
      homeKey: slot.computerId,
      storageId: slot.computerId,
      ...(slot.scope ? { scope: slot.scope } : {}),
      ...(slot.owner ? { owner: slot.owner } : {}),
    });
  } catch (error) {
    // Another process created it first: use theirs.
    if (!AgentComputerError.is(error, "CONFLICT")) throw error;
    return (await leases.getComputer(slot.computerId)) as ComputerRecord;
  }
}

/**
 * A record written before scopes (or owners) were stored gets the ones a
 * run gave it; a stored scope or owner is never changed.
 */
export async function withScope(
  leases: LeaseEngine,
  record: ComputerRecord,
  scope: ComputerScope | undefined,
  owner: ComputerOwner | undefined,
): Promise<ComputerRecord> {
  const changes = {
    ...(!record.scope && scope ? { scope } : {}),
    ...(!record.owner && owner ? { owner } : {}),
  };
  if (Object.keys(changes).length === 0) return record;
  try {
    return await leases.updateComputer({
      computerId: record.computerId,
      expectedVersion: record.version,
      changes,
    });
  } catch (error) {
    // Another process wrote first: theirs is as good (the next bring-up fills the scope in).
    if (!AgentComputerError.is(error, "CONFLICT")) throw error;
    return (await leases.getComputer(record.computerId)) ?? record;
  }
}
