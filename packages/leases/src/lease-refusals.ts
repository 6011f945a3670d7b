// What the lease engine (lease-engine.ts) writes and refuses with: a
// record's next version, and the LEASE_HELD and LEASE_LOST errors whose
// messages tell a caller what to do next.
import { AgentComputerError } from "@agent-computer/core";
import type { Lease } from "./lease.js";
import type { LeaseRecord } from "./lease-record.js";
import type { VersionedRecord } from "./versioned-record.js";

export function bump(previous: VersionedRecord | undefined, key: string, value: object): VersionedRecord {
  return { key, version: (previous?.version ?? 0) + 1, value: value as Record<string, unknown> };
}

export function reservationId(record: LeaseRecord): string {
  return `reservation:${record.key}:${record.token}`;
}

export function held(current: LeaseRecord, now: number, interrupted: boolean): AgentComputerError {
  if (interrupted) {
    return new AgentComputerError(
      "LEASE_HELD",
      `Computer "${current.computerId}" stays reserved for an interrupted ${current.purpose}; once its workers are stopped, call releaseInterrupted({ id: "${reservationId(current)}", workersStopped: true }).`,
      { details: { id: reservationId(current), status: "interrupted" } },
    );
  }
  const until =
    current.kind === "reservation"
      ? "it is released"
      : `it is released or expires (in ${Math.ceil(current.expiresAt - now)} ms)`;
  return new AgentComputerError(
    "LEASE_HELD",
    `The ${current.kind} lease "${current.key}" is held by another holder; retry when ${until}.`,
    {
      details: {
        kind: current.kind,
        key: current.key,
        ...(current.kind === "reservation" ? {} : { expiresInMs: current.expiresAt - now }),
      },
    },
  );
}

export function lost(lease: Lease, why: string): AgentComputerError {
  return new AgentComputerError(
    "LEASE_LOST",
    `The ${lease.kind} lease "${lease.key}" (token ${lease.token}) is lost: ${why}. Every handle bound to it now refuses to act: acquire the lease again (for a bot: end this run and start a new one).`,
    {
      details: { kind: lease.kind, key: lease.key, token: lease.token },
    },
  );
}

export function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The store's record when `lease` is still its live holder; FENCED_OUT or LEASE_LOST otherwise. */
export function classifyLease(lease: Lease, current: LeaseRecord | undefined, now: number): LeaseRecord {
  if (current && current.token > lease.token) {
    throw new AgentComputerError(
      "FENCED_OUT",
      `A newer holder (token ${current.token}) has the ${lease.kind} lease "${lease.key}"; this holder (token ${lease.token}) must stop: every handle bound to its lease refuses to act (for a bot: end this run and start a new one).`,
      { details: { kind: lease.kind, key: lease.key, token: lease.token, currentToken: current.token } },
    );
  }
  if (!current || current.token < lease.token) throw lost(lease, "the store no longer knows it (was the store reset?)");
  if (current.released) throw lost(lease, "it was released");
  if (now >= current.expiresAt)
    throw lost(lease, current.kind === "reservation" ? "it was interrupted (no heartbeat)" : "it expired");
  return current;
}
