import { readFileSync, rmSync } from "node:fs";
import { CliError } from "./cli-error.js";
import type { DesktopState } from "./desktop-state.js";
import { controlRequest } from "./gateway-control.js";
import { GatewayFiles, type ScreenMode } from "./gateway-files.js";
import { isAlive, type ProcessIdentity, signal, sleep, waitGone } from "./process-status.js";

/** What the gateway remembers of an x11vnc it started, in its folder. */
export interface VncRecord {
  readonly slot: number;
  readonly mode: ScreenMode;
  readonly port: number;
  /** The slot claim it serves: a recycled display never gets an old server. */
  readonly incarnation: string;
  readonly process: ProcessIdentity;
}

export function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** The gateway process named in its identity file, when that file exists. */
export const gatewayIdentity = (files: GatewayFiles) => readJson<ProcessIdentity>(files.identityFile);

/** Stops the x11vnc recorded for a slot (both modes); true when none is left running. */
export async function stopRecordedVnc(files: GatewayFiles, slot: number): Promise<boolean> {
  const records = (["view", "control"] as const)
    .map((mode) => ({ file: files.vncRecord(slot, mode), record: readJson<VncRecord>(files.vncRecord(slot, mode)) }))
    .filter((r) => r.record !== undefined);
  const processes = records.map((r) => r.record?.process);
  for (const p of processes) signal(p, "SIGTERM");
  let gone = await waitGone(processes, 3000);
  if (!gone) {
    for (const p of processes) signal(p, "SIGKILL");
    gone = await waitGone(processes, 2000);
  }
  if (gone) {
    for (const r of records) rmSync(r.file, { force: true });
    for (const mode of ["view", "control"] as const) rmSync(files.vncPassword(slot, mode), { force: true });
  }
  return gone;
}

/**
 * Part of every slot teardown, before the slot is released: the gateway
 * closes every capability of the slot (open websockets included), removes
 * their sockets and stops the slot's x11vnc. A gateway that is not running
 * has nothing open; x11vnc it left behind are stopped here. Throws when
 * anything may still be connected, so the slot stays reserved for a retry.
 */
export async function closeScreensOfSlot(state: DesktopState, slot: number): Promise<void> {
  const files = new GatewayFiles(state);
  const gateway = gatewayIdentity(files);
  if (isAlive(gateway)) {
    // A gateway that is starting listens within moments; one that is up answers at once.
    const until = Date.now() + 5000;
    for (;;) {
      try {
        await controlRequest(files.controlSocket, { op: "close-slot", slot }, 15_000);
        break;
      } catch (error) {
        if (error instanceof CliError) throw error;
        if (!isAlive(gateway)) break; // it died: nothing of it is open any more
        if (Date.now() > until) {
          throw new CliError("UNAVAILABLE", `The screen gateway did not answer: ${(error as Error).message}`);
        }
        await sleep(100);
      }
    }
  }
  if (!(await stopRecordedVnc(files, slot))) {
    throw new CliError("UNAVAILABLE", `The screen servers of display slot ${slot} did not stop.`);
  }
}
