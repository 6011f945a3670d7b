import { resolve } from "node:path";
import type { DesktopState } from "./desktop-state.js";
import type { DisplaySlotRecord } from "./display-slot-record.js";
import { controlRequest } from "./gateway-control.js";
import { ensureGateway } from "./screen-verbs.js";

/**
 * `desktop terminal grant`: a terminal capability under a live control
 * capability of the bot's running desktop (`controlId`), or, without one,
 * under a new control capability that the terminal owns (revoking the
 * terminal ends it too). The token is printed once and kept nowhere.
 * Revoking uses `desktop screen revoke` (or its alias `terminal revoke`).
 */
export async function grantTerminal(
  state: DesktopState,
  record: DisplaySlotRecord,
  request: { controlId?: string; ttlMs: number; home: string },
): Promise<Record<string, unknown>> {
  const files = await ensureGateway(state);
  const reply = await controlRequest(
    files.controlSocket,
    {
      op: "grant-terminal",
      bot: record.bot,
      slot: record.slot,
      incarnation: record.incarnation,
      ...(request.controlId === undefined ? {} : { controlId: request.controlId }),
      ttlMs: request.ttlMs,
      home: resolve(request.home),
    },
    30_000,
  );
  return {
    id: reply.id,
    token: reply.token,
    path: reply.path,
    expiresAt: reply.expiresAt,
    controlId: reply.controlId,
  };
}
