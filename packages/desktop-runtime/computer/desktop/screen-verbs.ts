import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DESKTOP_STATE_ENV } from "../../src/desktop/display-apart-policy.js";
import { CliError } from "./cli-error.js";
import { launch } from "./desktop-lifecycle.js";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { CAPABILITY_ID, MAX_TTL_MS, MIN_TTL_MS } from "./gateway-capability.js";
import { controlRequest } from "./gateway-control.js";
import { GatewayFiles, type ScreenMode } from "./gateway-files.js";
import { isAlive, signal, sleep, waitGone } from "./process-status.js";
import { gatewayIdentity } from "./screen-teardown.js";

export { MAX_TTL_MS, MIN_TTL_MS };
/** A capability's lifetime when the caller names none. */
export const DEFAULT_TTL_MS = 10 * 60_000;

const answers = (files: GatewayFiles) =>
  controlRequest(files.controlSocket, { op: "ping" }, 3000).then(
    () => true,
    () => false,
  );

/**
 * The gateway, started (detached, as this command's user) when none
 * answers. Under the desktop lock, so concurrent grants start one; a
 * gateway that is alive but does not answer is replaced.
 */
export async function ensureGateway(state: DesktopState): Promise<GatewayFiles> {
  const files = new GatewayFiles(state);
  if (await answers(files)) return files;
  if (process.getuid?.() === 0) {
    throw new CliError(
      "UNSUPPORTED",
      "Run desktop as the computer's user (uid 1000): the screen gateway never runs as root.",
    );
  }
  await state.locked(async () => {
    if (await answers(files)) return;
    const stale = gatewayIdentity(files);
    if (isAlive(stale)) {
      signal(stale, "SIGKILL");
      await waitGone([stale], 3000);
    }
    files.prepare();
    const script = process.argv[1];
    if (!script) throw new CliError("UNAVAILABLE", "Cannot tell where the desktop command lives.");
    const gateway = launch(files.dir, "gateway-process", process.execPath, [script, "gateway"], {
      [DESKTOP_STATE_ENV]: state.dir,
    });
    writeFileSync(files.identityFile, JSON.stringify(gateway), { mode: 0o600 });
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (await answers(files)) return;
      if (!isAlive(gateway)) {
        throw new CliError("UNAVAILABLE", `The screen gateway exited during start: ${startLog(files)}`);
      }
      if (Date.now() > deadline) throw new CliError("TIMEOUT", "The screen gateway did not start within 10 s.");
      await sleep(50);
    }
  }, 40_000);
  return files;
}

function startLog(files: GatewayFiles): string {
  try {
    const text = readFileSync(join(files.dir, "gateway-process.log"), "utf8").trim();
    const reported = /"message":"([^"]*)"/.exec(text)?.[1];
    return (reported ?? text.split("\n").slice(-3).join(" | ")).slice(0, 500) || "(no output)";
  } catch {
    return "(no output)";
  }
}

/** `desktop screen grant`: a new capability on the bot's display; the token is printed once and kept nowhere. */
export async function grantScreen(
  state: DesktopState,
  record: DisplaySlotRecord,
  mode: ScreenMode,
  ttlMs: number,
): Promise<Record<string, unknown>> {
  const files = await ensureGateway(state);
  const reply = await controlRequest(
    files.controlSocket,
    { op: "grant", bot: record.bot, slot: record.slot, incarnation: record.incarnation, mode, ttlMs },
    30_000,
  );
  return { id: reply.id, token: reply.token, path: reply.path, expiresAt: reply.expiresAt, mode };
}

/** `desktop screen revoke`: idempotent; with no gateway running there is nothing to revoke. */
export async function revokeScreen(state: DesktopState, id: string): Promise<Record<string, unknown>> {
  if (!CAPABILITY_ID.test(id))
    throw new CliError("INVALID_ARGUMENT", "--id must be a capability id as grant printed it.");
  const files = new GatewayFiles(state);
  if (!isAlive(gatewayIdentity(files))) return { revoked: false };
  const reply = await controlRequest(files.controlSocket, { op: "revoke", id }, 15_000);
  return { revoked: reply.revoked === true };
}
