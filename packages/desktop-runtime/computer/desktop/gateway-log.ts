import { appendFileSync, renameSync, statSync } from "node:fs";

const MAX_BYTES = 4 * 1024 * 1024;

/**
 * The gateway's log: one line per event with capability and connection
 * ids, modes, slots and outcomes. Never tokens, headers or addresses.
 * Kept to two files of at most 4 MiB.
 */
export class GatewayLog {
  private writes = 0;

  constructor(private readonly file: string) {
    this.rotate();
  }

  write(event: string, fields: Record<string, string | number | boolean | undefined> = {}): void {
    const parts = [new Date().toISOString(), event];
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) parts.push(`${key}=${String(value).replace(/\s+/g, "_")}`);
    }
    try {
      appendFileSync(this.file, `${parts.join(" ")}\n`, { mode: 0o600 });
    } catch {
      // A full disk must not take the screens down.
    }
    if (++this.writes % 500 === 0) this.rotate();
  }

  private rotate(): void {
    try {
      if (statSync(this.file).size > MAX_BYTES) renameSync(this.file, `${this.file}.1`);
    } catch {
      // No log yet.
    }
  }
}
