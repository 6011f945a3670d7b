import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { CliError } from "./cli-error.js";
import { displayOf, launch } from "./desktop-lifecycle.js";
import type { DesktopState } from "./desktop-state.js";
import { sharesBotNamespaces } from "./display-isolation.js";
import { type GatewayFiles, type ScreenMode, slotRecordNow, slotServes, vncPortOf } from "./gateway-files.js";
import type { GatewayLog } from "./gateway-log.js";
import { isAlive, sleep } from "./process-status.js";
import { readJson, stopRecordedVnc, type VncRecord } from "./screen-teardown.js";
import { newVncPassword, passwordOfVncFile, vncPasswordFile } from "./vnc-auth.js";
import type { VncTarget } from "./vnc-relay.js";

const START_TIMEOUT_MS = 10_000;

/**
 * The gateway's x11vnc: per active display at most two, started on the
 * first grant of a mode, on 127.0.0.1 only: one `-viewonly` (it drops
 * every input event), one for control. Debian's x11vnc cannot listen on a
 * Unix socket, so the per-capability sockets are bridged to these ports,
 * and whatever else reaches loopback (a bot's process or a page of its
 * browser where the display shares its container, a program in the
 * display's container) would reach them too: each start gets a fresh
 * random password (`-rfbauth`, a 0600 file in the gateway's 0700 folder,
 * never in argv, the environment or a log) that only the gateway answers
 * with (vnc-relay.ts; docs/architecture.md §4, "Whose input a display takes").
 */
export class VncServers {
  private readonly starting = new Map<string, Promise<VncTarget>>();

  constructor(
    private readonly state: DesktopState,
    private readonly files: GatewayFiles,
    private readonly log: GatewayLog,
  ) {}

  /** The loopback port and password of the slot's x11vnc in `mode`, started if it does not run. */
  ensure(slot: number, mode: ScreenMode, incarnation: string): Promise<VncTarget> {
    const key = `${slot}-${mode}`;
    const pending = this.starting.get(key);
    if (pending) return pending;
    const start = this.start(slot, mode, incarnation).finally(() => this.starting.delete(key));
    this.starting.set(key, start);
    return start;
  }

  private async start(slot: number, mode: ScreenMode, incarnation: string): Promise<VncTarget> {
    if (!slotServes(slotRecordNow(this.state, slot), incarnation)) {
      throw new CliError("NOT_FOUND", `Display slot ${slot} no longer runs that desktop.`);
    }
    const file = this.files.vncRecord(slot, mode);
    const existing = readJson<VncRecord>(file);
    if (existing && isAlive(existing.process) && existing.incarnation === incarnation) {
      const password = this.passwordOf(slot, mode);
      if (password) return { port: existing.port, password };
    }
    if (existing && isAlive(existing.process)) {
      // A server of an earlier claim of this display, or one whose password is gone: never reuse it.
      if (!(await stopRecordedVnc(this.files, slot))) {
        throw new CliError("UNAVAILABLE", `An old screen server of display slot ${slot} did not stop.`);
      }
    }
    const port = vncPortOf(slot, mode);
    const name = `x11vnc-${slot}-${mode}`;
    const password = newVncPassword();
    const args = [
      "-display",
      displayOf(slot),
      "-rfbport",
      String(port),
      "-localhost",
      "-noipv6",
      "-shared",
      "-forever",
      "-rfbauth",
      this.writePassword(slot, mode, password),
      "-norc",
      "-noncache",
      "-xkb",
      ...(mode === "view" ? ["-viewonly"] : []),
      // X offers no MIT-SHM there (display-isolation.ts): its segments would be in the IPC namespace the bot shares.
      ...(sharesBotNamespaces() ? ["-noshm"] : []),
    ];
    const server = launch(this.files.dir, name, "x11vnc", args);
    const record: VncRecord = { slot, mode, port, incarnation, process: server };
    writeFileSync(file, JSON.stringify(record), { mode: 0o600 });
    this.log.write("vnc-start", { slot, mode, pid: server.pid });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (!isAlive(server)) {
        throw new CliError(
          "UNAVAILABLE",
          `The screen server of display slot ${slot} exited during start: ${tail(join(this.files.dir, `${name}.log`))}`,
        );
      }
      if (await accepts(port)) return { port, password };
      if (Date.now() > deadline) {
        throw new CliError("TIMEOUT", `The screen server of display slot ${slot} did not listen within 10 s.`);
      }
      await sleep(100);
    }
  }

  /** A new server's password, in the file x11vnc reads it from on each connection; the file's path. */
  private writePassword(slot: number, mode: ScreenMode, password: Buffer): string {
    const file = this.files.vncPassword(slot, mode);
    rmSync(file, { force: true });
    writeFileSync(file, vncPasswordFile(password), { mode: 0o600, flag: "wx" });
    return file;
  }

  /** The running server's password (a restarted gateway reads it back), or undefined when it cannot be read. */
  private passwordOf(slot: number, mode: ScreenMode): Buffer | undefined {
    try {
      return passwordOfVncFile(readFileSync(this.files.vncPassword(slot, mode)));
    } catch {
      return undefined;
    }
  }

  /** Waits for starts of the slot's servers under way, whatever their outcome. */
  async settle(slot: number): Promise<void> {
    for (const mode of ["view", "control"] as const) await this.starting.get(`${slot}-${mode}`)?.catch(() => {});
  }

  /** Stops the slot's servers; false when one is still running. */
  async stopSlot(slot: number): Promise<boolean> {
    const gone = await stopRecordedVnc(this.files, slot);
    this.log.write("vnc-stop", { slot, outcome: gone ? "stopped" : "still-running" });
    return gone;
  }

  /** Stops servers whose display was released or claimed again (an X server that died, a teardown elsewhere). */
  async sweep(): Promise<void> {
    for (const name of readdirSync(this.files.dir)) {
      const match = /^vnc-(\d+)-(view|control)\.json$/.exec(name);
      if (!match) continue;
      const record = readJson<VncRecord>(join(this.files.dir, name));
      const slot = Number(match[1]);
      if (record && slotServes(slotRecordNow(this.state, slot), record.incarnation)) continue;
      if (this.starting.has(`${slot}-view`) || this.starting.has(`${slot}-control`)) continue;
      await this.stopSlot(slot);
    }
  }
}

/** Whether something listens on the loopback port: connects, then closes at once. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").trim().split("\n").slice(-4).join(" | ").slice(0, 600);
  } catch {
    return "(no log)";
  }
}
