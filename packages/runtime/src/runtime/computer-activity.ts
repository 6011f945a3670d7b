import { AgentComputerError } from "@agent-computer/core";
import type { StateStore, VersionedRecord } from "@agent-computer/leases";

const MAX_ATTEMPTS = 32;

/**
 * What every worker of a deployment knows about one computer's use, beside
 * its leases (docs/architecture.md §9): the bots that ever ran on it (the
 * store has no scan, and their leases are looked up by bot), when it was
 * last used, which runs wait for a takeover since when, and whether a
 * checkpoint was deferred for the last one to finish.
 */
export interface ComputerActivity {
  readonly bots: readonly string[];
  /** By the runtime's clock. */
  readonly lastActivityAt: number;
  /** Bot id -> when its run asked for a takeover (runtime clock). */
  readonly waiting: Readonly<Record<string, number>>;
  readonly checkpointPending: boolean;
  /**
   * Bot id -> when its last successful run ended with its screen kept
   * (runtime clock): idle screens, the oldest of which makes room at the
   * screen limit.
   */
  readonly screens: Readonly<Record<string, number>>;
}

interface StoredActivity extends ComputerActivity {
  readonly type: "computer-activity";
}

/**
 * The deployment's per-computer activity records, one key per computer.
 * Each change is a compare-and-set commit, retried on a lost race; a
 * change that would write what is stored already writes nothing.
 */
export class ComputerActivities {
  private readonly prefix: string;

  constructor(
    private readonly store: StateStore,
    deployment: string,
  ) {
    this.prefix = `runtime/${encodeURIComponent(deployment)}/activity/`;
  }

  /** The computer's activity; undefined when no worker recorded any yet. */
  async get(computerId: string): Promise<ComputerActivity | undefined> {
    const key = this.keyOf(computerId);
    return activityOf((await this.store.read([key])).get(key));
  }

  /** Applies `change` to the computer's activity (an empty one when there is none) in one commit. */
  async update(computerId: string, change: (current: ComputerActivity) => ComputerActivity): Promise<ComputerActivity> {
    const key = this.keyOf(computerId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const record = (await this.store.read([key])).get(key);
      const current = activityOf(record) ?? {
        bots: [],
        lastActivityAt: 0,
        waiting: {},
        checkpointPending: false,
        screens: {},
      };
      const next = change(current);
      if (JSON.stringify(next) === JSON.stringify(current) && record) return current;
      const value: StoredActivity = { type: "computer-activity", ...next };
      const ok = await this.store.commit(
        [{ key, version: record?.version ?? null }],
        [{ key, version: (record?.version ?? 0) + 1, value: value as unknown as Record<string, unknown> }],
      );
      if (ok) return next;
    }
    throw new AgentComputerError(
      "CONFLICT",
      `Gave up after ${MAX_ATTEMPTS} attempts on the activity of "${computerId}".`,
    );
  }

  private keyOf(computerId: string): string {
    return `${this.prefix}${encodeURIComponent(computerId)}`;
  }
}

function activityOf(record: VersionedRecord | undefined): ComputerActivity | undefined {
  if (!record) return undefined;
  const { type, ...activity } = record.value as unknown as StoredActivity;
  if (type !== "computer-activity") {
    throw new AgentComputerError(
      "UNAVAILABLE",
      `The state store holds a record at "${record.key}" that is not a computer's activity.`,
      {
        retryable: false,
      },
    );
  }
  return { ...activity, screens: activity.screens ?? {} };
}
