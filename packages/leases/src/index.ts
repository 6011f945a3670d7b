// The lease and fencing engine (docs/architecture.md §6): the
// state-store port, the in-memory store, leases of every kind, computer
// records and the fenced revision commit. See README.md in this folder.
export type { BotHolds } from "./bot-holds.js";
export { checkCommit } from "./check-commit.js";
export type { CommitExpectation } from "./commit-expectation.js";
export { type ComputerOwner, computerOwnerSchema } from "./computer-owner.js";
export type { ComputerRecord } from "./computer-record.js";
export { type ComputerRun, computerRunSchema } from "./computer-run.js";
export { type ComputerScope, computerScopeSchema } from "./computer-scope.js";
// The stored layout of records and lease keys, for state-store authors and
// the contention harness of @agent-computer/testing.
export { type ComputerValue, computerValueOf } from "./computer-value.js";
export { fenced } from "./fenced-machine.js";
export type { Lease } from "./lease.js";
export { LeaseEngine } from "./lease-engine.js";
export type { LeaseEngineOptions } from "./lease-engine-options.js";
export type { LeaseKind } from "./lease-kind.js";
export { derivedKey } from "./lease-record.js";
export { MemoryStateStore } from "./memory-state-store.js";
export type { MemoryStateStoreOptions } from "./memory-state-store-options.js";
export type { Reservation } from "./reservation.js";
export type { ReservationPurpose } from "./reservation-purpose.js";
export type { ReservationState } from "./reservation-state.js";
export type { RunState } from "./run-state.js";
export { scopeOf } from "./scope-of.js";
export type { StateStore } from "./state-store.js";
export type { VersionedRecord } from "./versioned-record.js";
