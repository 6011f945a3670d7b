import { chown, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
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
  /**
   * The desktop runtime's state folder (`AGENT_COMPUTER_DESKTOP_STATE`, a
   * private display only): a short path in the system's temporary folder,
   * as the image's `/tmp/agent-computer-desktops`, since the screen
   * gateway's Unix sockets live in it and a socket's path has at most 107
   * bytes; it describes processes, which a reboot ends anyway.
   */
  readonly desktopState?: string;
  status: "running" | "stopped";
}

/**
 * One folder per computer under `<dataDir>/host-computers`, holding its
 * record (`computer.json`, written whole and renamed into place).
 */
export class HostComputerRecords {
  constructor(readonly dir: string) {}

  folderOf(id: string): string {
    return join(this.dir, id);
  }

  /** A new desktop state folder (0700, a fresh random name) owned by the computer's user. */
  async makeDesktopState(user: HostUser | undefined): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "agent-computer-host-"));
    if (user) await chown(dir, user.uid, user.gid);
    return dir;
  }

  async save(record: HostComputerRecord): Promise<void> {
    const file = join(this.folderOf(record.id), "computer.json");
    await mkdir(this.folderOf(record.id), { recursive: true, mode: 0o700 });
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
  async remove(record: HostComputerRecord): Promise<void> {
    await rm(join(this.folderOf(record.id), "computer.json"), { force: true });
    await rm(this.folderOf(record.id), { recursive: true, force: true });
    if (record.desktopState) await rm(record.desktopState, { recursive: true, force: true });
  }
}
