import { AgentComputerError } from "@agent-computer/core";
import type { LeaseKind } from "./lease-kind.js";
import type { ReservationPurpose } from "./reservation-purpose.js";
import type { VersionedRecord } from "./versioned-record.js";

/**
 * How the engine stores one lease key. The record is never deleted: a
 * release only marks it, so the next grant continues from `token`.
 */
export interface LeaseRecord {
  readonly type: "lease";
  readonly kind: LeaseKind;
  readonly key: string;
  readonly holder: string;
  readonly token: number;
  readonly ttlMs: number;
  readonly grantedAt: number;
  /** For a reservation: when it turns interrupted (last heartbeat + ttlMs). */
  readonly expiresAt: number;
  readonly released: boolean;
  readonly computerId?: string;
  readonly botId?: string;
  readonly purpose?: ReservationPurpose;
}

/** Store key of a lease: namespaced by kind, so an app's key never collides with a derived one. */
export function leaseStoreKey(kind: LeaseKind, key: string): string {
  return `lease/${kind}/${key}`;
}

/** Derived keys encode each id, so ("a/b", "c") and ("a", "b/c") stay distinct keys. */
export const derivedKey = {
  execution: (computerId: string, botId: string) => `${enc(computerId)}/${enc(botId)}`,
  userControl: (computerId: string, botId: string) => `${enc(computerId)}/${enc(botId)}`,
  checkpoint: (computerId: string) => enc(computerId),
  reservation: (computerId: string) => enc(computerId),
  computer: (computerId: string) => `computer/${enc(computerId)}`,
};

function enc(id: string): string {
  return encodeURIComponent(id);
}

/**
 * Whether the key is taken. A reservation never lapses by time (interrupted
 * is still reserved); the other kinds lapse at `expiresAt`.
 */
export function isHeld(record: LeaseRecord | undefined, now: number): boolean {
  if (!record || record.released) return false;
  return record.kind === "reservation" || now < record.expiresAt;
}

/** The lease stored under `record`, or undefined; a foreign shape is a corrupt store. */
export function leaseRecordOf(record: VersionedRecord | undefined): LeaseRecord | undefined {
  if (!record) return undefined;
  const v = record.value as Partial<LeaseRecord>;
  if (v.type !== "lease" || typeof v.token !== "number" || typeof v.expiresAt !== "number")
    throw corrupt(record.key, "a lease");
  return v as LeaseRecord;
}

export function corrupt(key: string, what: string): AgentComputerError {
  return new AgentComputerError(
    "UNAVAILABLE",
    `The state store holds a record at "${key}" that is not ${what}; the store is damaged or shared with other software.`,
    { retryable: false, details: { key } },
  );
}
