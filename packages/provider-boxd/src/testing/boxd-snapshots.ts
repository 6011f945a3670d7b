import { randomBytes } from "node:crypto";
import type { ComputerContainers } from "@agent-computer/testing/emulator";
import type { VmRecord } from "./boxd-vms.js";

/** One snapshot as the emulator keeps it (SnapshotInfo's fields, and where its capture is). */
export interface SnapshotRecord {
  readonly snapshot_id: string;
  readonly name: string;
  readonly org: string;
  version: number;
  /** [vm] SnapshotInfo.status: "pending" until the capture is stored, then "ready" or "failed". */
  status: "pending" | "ready" | "failed";
  /** The committed image machines restored from it run (set once ready). */
  image?: string;
  /** The machine it was taken of. */
  readonly sourceVm: string;
}

/**
 * The organisations' snapshots ([vm] CreateSnapshot / GetSnapshot): taken of
 * a running machine, named uniquely per owner, saved again under the same
 * name with the version bumped; the answer says "pending" and the capture
 * is stored in the background (ready, or failed). The capture here is the
 * container's filesystem committed to an image: memory is not modelled (as
 * the public fake does not: discobox-ai/vm fakeapi_test.go, "Memory is not
 * modelled: a restored machine's agent starts fresh"), so a machine
 * restored from it boots its disk.
 */
export class BoxdSnapshots {
  private readonly snapshots = new Map<string, SnapshotRecord>();
  /** Captures under way, so close waits for them before removing images. */
  private readonly captures = new Set<Promise<void>>();
  private failures = 0;

  constructor(private readonly containers: ComputerContainers) {}

  private key(org: string, name: string): string {
    return `${org}\u0000${name}`;
  }

  find(org: string, name: string): SnapshotRecord | undefined {
    return this.snapshots.get(this.key(org, name));
  }

  /** The next `times` captures fail (their snapshots end "failed"), as a capture that could not be stored. */
  failNext(times = 1): void {
    this.failures += times;
  }

  /** Starts a capture of `vm` under `name` and answers at once: the record as it is then, pending. */
  take(org: string, vm: VmRecord, name: string): Readonly<SnapshotRecord> {
    const earlier = this.find(org, name);
    const record: SnapshotRecord = {
      snapshot_id: earlier?.snapshot_id ?? `snap_${randomBytes(4).toString("hex")}`,
      name,
      org,
      version: (earlier?.version ?? 0) + 1,
      status: "pending",
      sourceVm: vm.vm_id,
    };
    this.snapshots.set(this.key(org, name), record);
    const answer = { ...record };
    const fail = this.failures > 0;
    if (fail) this.failures--;
    const capture = this.capture(record, vm, fail).finally(() => this.captures.delete(capture));
    this.captures.add(capture);
    return answer;
  }

  private async capture(record: SnapshotRecord, vm: VmRecord, fail: boolean): Promise<void> {
    try {
      if (fail) throw new Error("capture refused");
      const image = await this.containers.snapshot(vm.containerId, `${record.snapshot_id.slice(5)}-v${record.version}`);
      // A later save of the name replaced this record: only the latest version counts (latest-only, [vm]).
      if (this.find(record.org, record.name) !== record) return;
      record.image = image;
      record.status = "ready";
    } catch {
      if (this.find(record.org, record.name) === record) record.status = "failed";
    }
  }

  /** Waits for the captures under way (their images are removed with the emulator's others). */
  async settle(): Promise<void> {
    await Promise.all([...this.captures]);
  }
}
