import { randomBytes } from "node:crypto";
import { AgentComputerError } from "@agent-computer/core";
import type { HomeKeyring } from "../home-keyring.js";
import type { HomeRecord } from "../home-record.js";
import type { HomeRecords } from "../home-records.js";

// A storage id becomes a segment of object keys: the same alphabet, nothing that could climb out.
export const storageIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkedStorageId(record: HomeRecord): string {
  if (!storageIdPattern.test(record.storageId))
    throw new AgentComputerError(
      "INVALID_ARGUMENT",
      `The storage id of home "${record.homeKey}" cannot name objects: use letters, digits, '.', '_' and '-' (at most 128).`,
    );
  return record.storageId;
}

/** A home's record and data key: the computer records hold both, the key wrapped by the space's keyring. */
export class HomeKeys {
  constructor(
    readonly records: HomeRecords,
    private readonly keyring: HomeKeyring,
  ) {}

  async recordOf(homeKey: string): Promise<HomeRecord> {
    const record = await this.records.read(homeKey);
    if (record === undefined)
      throw new AgentComputerError(
        "NOT_FOUND",
        `No computer owns home "${homeKey}" (never created, or deleted); its objects, if any, are unreadable and the reconciler removes them.`,
        { details: { homeKey } },
      );
    return record;
  }

  /** The home's data key; the first checkpoint makes one and stores it wrapped with the record. */
  async dataKeyOf(record: HomeRecord): Promise<Uint8Array> {
    if (record.wrappedDataKey !== undefined) return this.keyring.unwrap(record.wrappedDataKey, record.storageId);
    const dataKey = randomBytes(32);
    const wrappedDataKey = await this.keyring.wrap(dataKey, record.storageId);
    try {
      await this.records.setWrappedDataKey({
        homeKey: record.homeKey,
        expectedVersion: record.version,
        wrappedDataKey,
      });
      return dataKey;
    } catch (error) {
      if (!AgentComputerError.is(error, "CONFLICT")) throw error;
      // Another writer stored the first key: use theirs.
      const current = await this.recordOf(record.homeKey);
      if (current.wrappedDataKey === undefined || current.storageId !== record.storageId) throw error;
      return this.keyring.unwrap(current.wrappedDataKey, current.storageId);
    }
  }
}
