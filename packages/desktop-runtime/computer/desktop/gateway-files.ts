import { chmodSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SCREEN_GATEWAY_PORT } from "../../src/desktop/screen-gateway-port.js";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";

export { SCREEN_GATEWAY_PORT };

/**
 * The gateway's port: `SCREEN_GATEWAY_PORT` in a computer of its own; a
 * computer sharing its host's network with others (a host computer,
 * packages/provider-host) names one of its own in `AGENT_COMPUTER_GATEWAY_PORT`,
 * which its machine's `portUrl(SCREEN_GATEWAY_PORT)` points at.
 */
export function gatewayPort(): number {
  const named = Number(process.env.AGENT_COMPUTER_GATEWAY_PORT);
  return Number.isInteger(named) && named > 0 && named < 65536 ? named : SCREEN_GATEWAY_PORT;
}

/** The two x11vnc of slot n listen on 127.0.0.1 at this plus 2n (view) and 2n + 1 (control). */
export const FIRST_VNC_PORT = 5700;

export type ScreenMode = "view" | "control";

export const vncPortOf = (slot: number, mode: ScreenMode) => FIRST_VNC_PORT + 2 * slot + (mode === "control" ? 1 : 0);

/**
 * Where the screen gateway keeps its files, inside the desktop state
 * folder (0700): its identity, its control socket, its log, the records and
 * passwords of the x11vnc it started, and a 0700 folder with one Unix socket per live
 * capability.
 */
export class GatewayFiles {
  readonly dir: string;
  readonly capsDir: string;

  constructor(readonly state: DesktopState) {
    this.dir = join(state.dir, "gateway");
    this.capsDir = join(this.dir, "caps");
  }

  /** Makes the folders (0700 even if they existed with other modes). */
  prepare(): void {
    for (const dir of [this.dir, this.capsDir]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
    }
  }

  get identityFile(): string {
    return join(this.dir, "gateway.json");
  }

  get controlSocket(): string {
    return join(this.dir, "control.sock");
  }

  get logFile(): string {
    return join(this.dir, "gateway.log");
  }

  /** One 0700 session folder per running PTY server (terminal-servers.ts). */
  get terminalsDir(): string {
    return join(this.dir, "terminals");
  }

  capabilitySocket(id: string): string {
    return join(this.capsDir, `${id}.sock`);
  }

  vncRecord(slot: number, mode: ScreenMode): string {
    return join(this.dir, `vnc-${slot}-${mode}.json`);
  }

  /** The `-rfbauth` file of that x11vnc (0600): the password only the gateway answers with (vnc-auth.ts). */
  vncPassword(slot: number, mode: ScreenMode): string {
    return join(this.dir, `vnc-${slot}-${mode}.passwd`);
  }
}

/**
 * The slot's record as it is on disk now, or undefined when the slot is
 * free. Read fresh on every check: a record with another incarnation is
 * another claim of the same display.
 */
export function slotRecordNow(state: DesktopState, slot: number): DisplaySlotRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(state.dir, `slot-${slot}.json`), "utf8")) as DisplaySlotRecord;
  } catch {
    return undefined;
  }
}

/** A capability may be granted and used while its slot's claim is the one it was granted on and X is up. */
export function slotServes(record: DisplaySlotRecord | undefined, incarnation: string): boolean {
  return (
    record !== undefined &&
    record.incarnation === incarnation &&
    (record.status === "running" || record.status === "quiesced")
  );
}
