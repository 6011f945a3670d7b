import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { RememberedSnapshot, SnapshotMemory } from "@agent-computer/page-browser";

/**
 * The latest snapshot of a bot's tab, kept in a file of the desktop state
 * folder: each page call is its own process. It holds node ids, roles,
 * names and hashes of what was shown (for deltas), never field values.
 */
export class FileSnapshotMemory implements SnapshotMemory<number> {
  constructor(private readonly path: string) {}

  async load(): Promise<RememberedSnapshot<number> | undefined> {
    try {
      return JSON.parse(readFileSync(this.path, "utf8")) as RememberedSnapshot<number>;
    } catch {
      return undefined;
    }
  }

  async save(snapshot: RememberedSnapshot<number>): Promise<void> {
    mkdirSync(dirname(this.path), { recursive: true });
    // Written then renamed, so a call cut midway never leaves half a file.
    writeFileSync(`${this.path}.tmp`, JSON.stringify(snapshot), { mode: 0o600 });
    renameSync(`${this.path}.tmp`, this.path);
  }
}
