import { chown, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { HostUser } from "./host-provider-options.js";

/** What the provider keeps of one host computer, so another provider instance can reconnect. */
export interface HostComputerRecord {
  /** The ref's id: 24 hex digits. */
  readonly id: string;
  readonly computerId: string;
  readonly homeKey: string;
  /** The home folder, absolute. */
  readonly homeDir: string;
  readonly labels: Record<string, string>;
  readonly screenLimit: number;
  readonly display: "none" | "private";
  /** The loopback port this computer's screen gateway listens on (a private display only). */
  readonly gatewayPort?: number;
  status: "running" | "stopped";
}

/**
 * One folder per computer under `<dataDir>/host-computers`: its record
 * (`computer.json`, written whole and renamed into place) and, for a
 * private display, the desktop runtime's state folder, which belongs to
 * the computer's user.
 */
export class HostComputerRecords {
  constructor(readonly dir: string) {}

  folderOf(id: string): string {
    return join(this.dir, id);
  }

  /** The desktop runtime's state folder of a computer (`AGENT_COMPUTER_DESKTOP_STATE`). */
  desktopStateOf(id: string): string {
    return join(this.folderOf(id), "desktops");
  }

  /** Makes the computer's folder, and its desktop state folder owned by `user`. */
  async prepare(id: string, user: HostUser | undefined): Promise<void> {
    // Searchable by the computer's user on the way to its desktop state, listable by the app only.
    await mkdir(this.folderOf(id), { recursive: true, mode: 0o711 });
    await mkdir(this.desktopStateOf(id), { recursive: true, mode: 0o700 });
    if (user) await chown(this.desktopStateOf(id), user.uid, user.gid);
  }

  async save(record: HostComputerRecord): Promise<void> {
    const file = join(this.folderOf(record.id), "computer.json");
    await mkdir(this.folderOf(record.id), { recursive: true, mode: 0o711 });
    await writeFile(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  }

  async load(id: string): Promise<HostComputerRecord | undefined> {
    try {
      return JSON.parse(await readFile(join(this.folderOf(id), "computer.json"), "utf8")) as HostComputerRecord;
    } catch {
      return undefined;
    }
  }

  async all(): Promise<HostComputerRecord[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const records = await Promise.all(names.map((name) => this.load(name)));
    return records.filter((r): r is HostComputerRecord => r !== undefined);
  }

  /** Forgets the computer: its record first, so a crash in between leaves no record of a half-removed one. */
  async remove(id: string): Promise<void> {
    await rm(join(this.folderOf(id), "computer.json"), { force: true });
    await rm(this.folderOf(id), { recursive: true, force: true });
  }
}
