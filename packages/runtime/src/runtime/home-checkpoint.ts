import type { AgentHomeStore, HomeCheckpoint } from "@agent-computer/checkpoint";
import type { Machine } from "@agent-computer/core";
import { AgentComputerError } from "@agent-computer/core";
import type { ComputerRecord, Lease, LeaseEngine } from "@agent-computer/leases";

/** What saving a home needs: the leases, the home store, and who holds the checkpoint lease. */
export interface HomeCheckpointParts {
  readonly leases: LeaseEngine;
  readonly homeStore: AgentHomeStore;
  /** The checkpoint lease's holder: this runtime process. */
  readonly holder: string;
  readonly leaseTtlMs: number;
  /** The provider's `mountedHome`: the store saves the folder itself, not an export. */
  readonly mountedHome: boolean;
}

/**
 * Saves `machine`'s home under the computer's checkpoint lease, renewed at a
 * third of its TTL meanwhile, and advances the record's revision at the home
 * store's commit point (docs/architecture.md §6, §8), so a paused saver whose
 * lease was taken over cannot commit. Desktops are quiesced around a remote
 * export, so browser profiles are consistent.
 */
export async function checkpointHome(
  parts: HomeCheckpointParts,
  computerId: string,
  machine: Machine,
): Promise<HomeCheckpoint> {
  const { leases, homeStore, mountedHome } = parts;
  const held = await holdCheckpointLease(parts, computerId);
  try {
    const record = await leases.getComputer(computerId);
    if (!record) throw new AgentComputerError("NOT_FOUND", `Computer "${computerId}" was deleted; nothing to save.`);
    const resume = !mountedHome && machine.quiesceDesktops ? await machine.quiesceDesktops() : undefined;
    try {
      return await homeStore.checkpoint({
        homeKey: record.homeKey,
        source: mountedHome ? { mounted: true } : { machine },
        committedRevision: record.revision,
        commit: async (next, attempt) => {
          await leases.commitRevision({
            computerId,
            lease: held.lease,
            expectedRevision: record.revision,
            next,
            ...(attempt === undefined ? {} : { attempt }),
          });
        },
      });
    } finally {
      await resume?.();
    }
  } finally {
    await held.release();
  }
}

/** Puts the record's latest checkpoint into `machine` (or into the mounted home); revision 0 when it has none. */
export async function restoreLatestHome(
  { homeStore, mountedHome }: HomeCheckpointParts,
  record: ComputerRecord,
  machine: Machine,
): Promise<{ revision: number }> {
  const latest = await homeStore.restore({
    homeKey: record.homeKey,
    target: mountedHome ? { mounted: true } : { machine },
    committedRevision: record.revision,
  });
  return { revision: latest?.revision ?? 0 };
}

/** The computer's checkpoint lease, renewed until released. */
async function holdCheckpointLease(
  { leases, holder, leaseTtlMs }: HomeCheckpointParts,
  computerId: string,
): Promise<{ readonly lease: Lease; release(): Promise<void> }> {
  let lease = await leases.acquireCheckpoint({ computerId, holder, ttlMs: leaseTtlMs });
  const heartbeat = setInterval(async () => {
    lease = await leases.renew(lease).catch(() => lease);
  }, leaseTtlMs / 3);
  heartbeat.unref?.();
  return {
    get lease() {
      return lease;
    },
    async release() {
      clearInterval(heartbeat);
      await leases.release(lease).catch(() => {});
    },
  };
}
