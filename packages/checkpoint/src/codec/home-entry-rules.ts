import { checkPath } from "./check-path.js";
import type { RestoreLimits } from "./restore-limits.js";
import { refuseOverLimit, refuseRestore, shown } from "./restore-refusal.js";
import type { TarEntryHeader } from "./tar-reader.js";

const FILE = 1;
const DIRECTORY = 2;
const IMPLIED_DIRECTORY = 3;

/** An entry that passed the rules. */
export interface AdmittedEntry {
  /** The checked home-relative path, without a trailing slash. */
  readonly path: string;
  /** Folders above it that no entry stated yet, parents first: whoever unpacks makes them. */
  readonly implied: readonly string[];
  /** A directory entry for a folder an earlier path implied: it exists already, and takes this entry's mode. */
  readonly wasImplied: boolean;
}

/**
 * The restore's rules for a home's entries, in archive order, kept in one
 * place for everything that reads a home archive (`restoreHome`,
 * `checkHomeArchive`, `readHomeArchive`): relative paths without `.` or
 * `..`, directories and regular files only, no entry twice, no file where
 * a folder is or below a file, and the limits.
 */
export class HomeEntryRules {
  private readonly made = new Map<string, number>();
  private entries = 0;
  private dataBytes = 0;

  constructor(private readonly bounds: Required<RestoreLimits>) {}

  /** Checks the next entry, or refuses it (RESTORE_REJECTED, LIMIT_EXCEEDED). */
  admit(header: TarEntryHeader): AdmittedEntry {
    const path = checkPath(header.path, this.bounds);
    if (header.kind === "other")
      refuseRestore(`"${shown(path)}" is a ${header.other}; only directories and regular files are restored`);
    if (this.entries >= this.bounds.maxEntries)
      refuseOverLimit(`the archive has more than ${this.bounds.maxEntries} entries`, { limit: "maxEntries" });
    this.entries++;
    const implied = this.parentsOf(path);
    const existing = this.made.get(path);
    if (header.kind === "directory") {
      if (existing === FILE || existing === DIRECTORY) refuseRestore(`the archive holds "${shown(path)}" twice`);
      this.made.set(path, DIRECTORY);
      return { path, implied, wasImplied: existing === IMPLIED_DIRECTORY };
    }
    if (existing !== undefined)
      refuseRestore(
        existing === FILE
          ? `the archive holds "${shown(path)}" twice`
          : `the file "${shown(path)}" would replace a directory`,
      );
    // A sparse file counts at its real size against the file limit, and at
    // the data it holds against the total (its holes take no disk).
    const fileSize = header.sparse?.realSize ?? header.size;
    if (fileSize > this.bounds.maxFileBytes)
      refuseOverLimit(`"${shown(path)}" is ${fileSize} bytes, over the ${this.bounds.maxFileBytes}-byte file limit`, {
        limit: "maxFileBytes",
      });
    if (this.dataBytes + header.size > this.bounds.maxTotalBytes)
      refuseOverLimit(`the archive's files add up to more than ${this.bounds.maxTotalBytes} bytes`, {
        limit: "maxTotalBytes",
      });
    this.dataBytes += header.size;
    this.made.set(path, FILE);
    return { path, implied, wasImplied: false };
  }

  private parentsOf(path: string): string[] {
    const implied: string[] = [];
    let slash = path.indexOf("/");
    while (slash !== -1) {
      const parent = path.slice(0, slash);
      const kind = this.made.get(parent);
      if (kind === FILE) refuseRestore(`"${shown(path)}" lies under the file "${shown(parent)}"`);
      if (kind === undefined) {
        this.made.set(parent, IMPLIED_DIRECTORY);
        implied.push(parent);
      }
      slash = path.indexOf("/", slash + 1);
    }
    return implied;
  }
}
